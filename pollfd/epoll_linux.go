//go:build linux

package pollfd

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// registerEvents is Go's registration: both directions, edge-triggered,
// once per descriptor (runtime/netpoll_epoll.go: netpollopen).
const registerEvents = unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET

// Event bits that wake each gate, as the runtime maps them: a hang-up or an
// error wakes both directions so the retried syscall reports it; a peer's
// half-close (RDHUP) wakes only the reader, whose retry sees EOF.
const (
	readEvents  = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR
	writeEvents = unix.EPOLLOUT | unix.EPOLLHUP | unix.EPOLLERR
	// hangUpEvents are those after which a stream's reader meets an end
	// of stream or an error, edge or no edge (Desc.hungUp).
	hangUpEvents = unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR
)

// eventBatch is how many events one epoll_wait fetches, as the runtime does.
const eventBatch = 128

// epoll_event.data is 64 bits; x/sys/unix splits it into Fd (low half) and
// Pad (high half) on every Linux architecture, whatever the struct's packing
// (12 bytes on amd64, 16 on arm64).
func setToken(ev *unix.EpollEvent, token uint64) {
	ev.Fd = int32(uint32(token))
	ev.Pad = int32(uint32(token >> 32))
}

func eventToken(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// epollWaitNow is epoll_wait with a zero timeout. It cannot block, so it is
// issued as a raw system call: no hand-off of the P, no scheduler round trip.
func epollWaitNow(epfd int, events []unix.EpollEvent) (int, unix.Errno) {
	n, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	return int(n), errno
}
