//go:build linux

package poll

// How an I/O loop enters the kernel: syscall.Syscall, as internal/poll
// does, or syscall.RawSyscall on a private socket a ReadyList watches.
//
// Syscall tells the scheduler that the thread may block (entersyscall):
// the P is left in _Psyscall, and sysmon hands it to another thread if
// the call is still running at its next look (20 µs to 10 ms later) while
// goroutines wait or no P is idle; the first such call after every P went
// idle also wakes sysmon from its deep sleep, which then looks again every
// 20 µs. For a call that may wait (a blocking descriptor, a regular file)
// that is what keeps the program running. A read or write on a
// non-blocking socket never waits for its peer: it copies what there is
// or what fits and returns, EAGAIN if nothing, in the time the copy and
// the protocol take — tens of µs for 64 KiB on loopback, where the write
// also runs the receiver's side. For a ReadyQueue's worker, which makes
// such calls back to back and never parks in them, and goes idle between
// bursts, the hand-off is a thread wake-up and two context switches per
// burst spent to gain nothing (docs/DESIGN.md, "Raw system calls";
// docs/PERFORMANCE.md has the measurement). So the loops use RawSyscall,
// which keeps the P, when all of these hold (rawIO):
//
//   - A ReadyList watches the descriptor (flagWatched): its I/O is a
//     worker's turn. A conn used the blocking way keeps Syscall: with
//     raw calls its reader, readied while the writer held its P, took
//     one-way bulk in smaller reads, at more CPU per MB than with
//     Syscall (docs/PERFORMANCE.md).
//   - The descriptor is private (flagPrivate): a socket gatenet made
//     itself, socket(2) or accept4(2) with SOCK_NONBLOCK, whose number
//     has never left gatenet. O_NONBLOCK belongs to the open file
//     description, which every dup and every process holding it shares;
//     a description no one else holds cannot be made blocking behind
//     gatenet's back. HandedOut (Dup, a RawConn, a dial's Control) clears
//     the flag for good, and so does SetBlocking; a socket from
//     FileConn or FileListener, a File, a pipe is never private.
//   - The call moves at most rawIOMax bytes, so that the time the P is
//     held, and a stop-the-world waits for the call to return, stays
//     that of a short copy.
//
// The kernel can still sleep briefly in such a call (the socket's lock,
// held by a concurrent reader or writer for its own copy; a page fault on
// the buffer); the P is idle for that long, as it is during any
// non-preemptible stretch. cloudwego/netpoll and gVisor's fdbased link
// make their socket reads and writes raw for the same reason.
//
// The pointers reach the kernel as unsafe.Pointer arguments converted to
// uintptr in the call expression itself, so the referents stay alive and
// are updated if the stack moves (unsafe.Pointer rule 4).

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawIOMax is the most bytes a raw system call moves: 256 KiB, copied in
// tens of µs.
const rawIOMax = 256 << 10

// MarkPrivate records that the descriptor is a socket gatenet made with
// SOCK_NONBLOCK and has not handed out: while a ReadyList watches it, its
// reads and writes may be raw system calls (see the top of this file).
func (fd *FD) MarkPrivate() {
	if fd.pd != nil {
		fd.flags.Or(flagPrivate)
	}
}

// Private reports whether the descriptor is private (MarkPrivate, and
// neither handed out nor made blocking since).
func (fd *FD) Private() bool { return fd.flags.Load()&flagPrivate != 0 }

// rawIO reports whether a call moving size bytes may keep the P.
func (fd *FD) rawIO(size int) bool { return size <= rawIOMax && fd.keepsP() }

// keepsP reports whether the descriptor's calls may keep the P, whatever
// their size: callers that must add sizes up ask it first.
func (fd *FD) keepsP() bool {
	const want = flagPrivate | flagWatched
	return fd.flags.Load()&(want|flagBlocking) == want
}

// sys3 is the system call trap(Sysfd, p, a3), moving at most size bytes,
// EINTR retried.
func (fd *FD) sys3(trap uintptr, p unsafe.Pointer, a3 uintptr, size int) (int, unix.Errno) {
	raw := fd.rawIO(size)
	for {
		var r uintptr
		var e unix.Errno
		if raw {
			r, _, e = unix.RawSyscall(trap, uintptr(fd.Sysfd), uintptr(p), a3)
		} else {
			r, _, e = unix.Syscall(trap, uintptr(fd.Sysfd), uintptr(p), a3)
		}
		if e != unix.EINTR {
			return int(r), e
		}
	}
}

// sys6 is the system call trap(Sysfd, p, a3, a4, p5, p6), moving at most
// size bytes, EINTR retried.
func (fd *FD) sys6(trap uintptr, p unsafe.Pointer, a3, a4 uintptr, p5, p6 unsafe.Pointer, size int) (int, unix.Errno) {
	raw := fd.rawIO(size)
	for {
		var r uintptr
		var e unix.Errno
		if raw {
			r, _, e = unix.RawSyscall6(trap, uintptr(fd.Sysfd), uintptr(p), a3, a4, uintptr(p5), uintptr(p6))
		} else {
			r, _, e = unix.Syscall6(trap, uintptr(fd.Sysfd), uintptr(p), a3, a4, uintptr(p5), uintptr(p6))
		}
		if e != unix.EINTR {
			return int(r), e
		}
	}
}

// read is read(2) of p, as x/sys's unix.Read: -1 and the errno on error.
func (fd *FD) read(p []byte) (int, error) {
	n, e := fd.sys3(unix.SYS_READ, bufferOf(p), uintptr(len(p)), len(p))
	if e != 0 {
		return -1, e
	}
	return n, nil
}

// write is write(2) of p, as x/sys's unix.Write: -1 and the errno on
// error.
func (fd *FD) write(p []byte) (int, error) {
	n, e := fd.sys3(unix.SYS_WRITE, bufferOf(p), uintptr(len(p)), len(p))
	if e != 0 {
		return -1, e
	}
	return n, nil
}

// bufferOf is p's address for the kernel, never nil (x/sys's _zero).
func bufferOf(p []byte) unsafe.Pointer {
	if len(p) == 0 {
		return unsafe.Pointer(&zeroByte)
	}
	return unsafe.Pointer(&p[0])
}
