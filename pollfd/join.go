//go:build linux

package pollfd

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Joining the epoll set. Open joins at once, as the runtime's pollOpen
// does; OpenLazy (sockets) leaves the join to the first wait or watch, so
// a descriptor served and closed without ever blocking costs no
// epoll_ctl. The rules that keep a late join from losing readiness are in
// gate.go ("Joining late").

// joined makes sure d is in its shard's epoll set before a wait in mode
// (join); once it is, one atomic load.
func (d *Desc) joined(mode Mode) error {
	if d.is(descInSet) {
		return nil
	}
	return d.join(mode)
}

// join adds d to its shard's epoll set, EPOLL_CTL_ADD with
// registerEvents and d's token: Open's registration, and a lazy Desc's
// (OpenLazy) at its first wait or watch. It does nothing if d is in the
// set already or closing, or if a wait in mode would fail at once (an
// expired deadline, an invalid mode: check); mode 0 is Open's and Watch's,
// for which only closing counts. Waits call it before they harvest, so
// that the harvest finds what EPOLL_CTL_ADD reports.
//
// One frame and a raw system call (epoll_ctl does not block): a wait makes
// it on the way to its first park, and a goroutine parked for an idle
// connection keeps the deepest stack it reached (gate.go, "Stack depth").
func (d *Desc) join(mode Mode) error {
	ev := unix.EpollEvent{Events: registerEvents}
	setToken(&ev, d.token)
	var errno unix.Errno
	d.mu.Lock()
	if !d.is(descInSet) && d.joinableLocked(mode) {
		_, _, errno = syscall.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(d.shard.epfd), unix.EPOLL_CTL_ADD,
			uintptr(d.fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
		if errno == 0 {
			d.setLocked(descInSet, true)
			d.shard.stats.epollAdds.Add(1)
		}
	}
	d.mu.Unlock()
	if errno != 0 {
		return epollCtlError(errno)
	}
	return nil
}

// joinableLocked is join's condition, with mu held.
func (d *Desc) joinableLocked(mode Mode) bool {
	if mode == 0 {
		return !d.is(descClosing)
	}
	g := d.gate(mode)
	return g != nil && d.check(mode, g) == nil
}

// epollCtlError is join's error, out of its frame.
//
//go:noinline
func epollCtlError(errno unix.Errno) error { return os.NewSyscallError("epoll_ctl", errno) }
