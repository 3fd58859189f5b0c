//go:build linux

package poll

import (
	"context"
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// Waiting for readiness without doing I/O: what lets a server hold many
// idle connections with no read buffer each (golang.org/issue/15735).

// WaitReadable parks until the descriptor is readable — data, a pending
// connection on a listener, end of stream or an error a Read would report
// — or until ctx is done, the read deadline passes or the descriptor is
// closed. It consumes nothing. It holds the read lock, so it queues behind
// (and ahead of) Reads as they do behind each other.
func (fd *FD) WaitReadable(ctx context.Context) error {
	return fd.waitReady(ctx, pollfd.ModeRead)
}

// WaitWritable is WaitReadable for room to write, under the write lock.
func (fd *FD) WaitWritable(ctx context.Context) error {
	return fd.waitReady(ctx, pollfd.ModeWrite)
}

// waitReady, under mode's lock: fail fast as an I/O call would (closed,
// expired deadline, done context), then look at the descriptor's state
// now with poll(2) — readiness that arrived before this call raised no new
// edge — and park for the next edge only if it is not ready. An edge wakes
// the park, and poll(2) confirms it: the drain loop may deliver an edge
// late, after this call's Prepare, for bytes a Read before it took, and
// that edge alone would report readiness that is gone (as a ReadyQueue's
// report can be stale). Then it prepares and parks again.
//
// One frame, no defer, one call into pollfd (so not ioLoop, fd_msg.go): a
// goroutine parked here for an idle connection keeps its deepest frames on
// its stack, and a 2 KiB stack that overflows doubles for good.
func (fd *FD) waitReady(ctx context.Context, mode pollfd.Mode) error {
	events := int16(unix.POLLIN | unix.POLLRDHUP)
	var err error
	if mode == pollfd.ModeRead {
		err = fd.readLockContext(ctx)
	} else {
		events = unix.POLLOUT
		err = fd.writeLockContext(ctx)
	}
	if err != nil {
		return err
	}
	// fd.pd nil: epoll refused it (a regular file), always ready, as
	// poll(2) says, unless ctx is done already: that fails at once, as on
	// any descriptor.
	if fd.pd == nil {
		err = ctx.Err()
	}
	for fd.pd != nil {
		err = fd.Prepare(mode)
		if err == nil {
			err = ctx.Err()
		}
		var ready bool
		if err == nil {
			ready, err = pollNow(fd.Sysfd, events)
		}
		if err != nil || ready || fd.isFile && fd.cannot(mode) {
			break
		}
		// Any readiness from here on is a new edge, which wakes the
		// gate. (Wait, not WaitContext, when ctx can never end: one frame
		// less under the park.) A write edge it takes, a ReadyList may
		// wait for (writeUnlock passes it on).
		if mode == pollfd.ModeWrite && fd.flags.Load()&flagWatched != 0 {
			fd.flags.Or(flagWriteWaited)
		}
		if ctx.Done() == nil {
			err = fd.pd.Wait(mode)
		} else {
			err = fd.pd.WaitContext(ctx, mode)
		}
		if err != nil {
			err = convertPollErr(err, fd.isFile)
			break
		}
	}
	if mode == pollfd.ModeRead {
		fd.readUnlock()
	} else {
		fd.writeUnlock()
	}
	return err
}

// cannot reports whether a File was opened without access for mode (a
// pipe's write end asked to read): its Read or Write fails at once
// (EBADF), while no edge would ever end a wait for its readiness. The
// access mode never changes, so it is read once (fcntl(2)), on the first
// wait that would park.
func (fd *FD) cannot(mode pollfd.Mode) bool {
	f := fd.flags.Load()
	if f&flagAccessKnown == 0 {
		fl, err := unix.FcntlInt(uintptr(fd.Sysfd), unix.F_GETFL, 0)
		if err != nil {
			return false
		}
		set := uint32(flagAccessKnown)
		switch fl & unix.O_ACCMODE {
		case unix.O_RDONLY:
			set |= flagReadOnly
		case unix.O_WRONLY:
			set |= flagWriteOnly
		}
		f = fd.flags.Or(set) | set
	}
	if mode == pollfd.ModeRead {
		return f&flagWriteOnly != 0
	}
	return f&flagReadOnly != 0
}

// ErrUnwatchable is Watch's error for a descriptor epoll refused.
var ErrUnwatchable = errors.New("gatenet: a descriptor epoll refused cannot be watched")

// Watch adds the descriptor to l, with v as what l's Next hands out
// (pollfd.Desc.Watch), or re-arms it: if it is readable already, l reports
// it at once. A closed descriptor reports the closed error; one epoll
// refused cannot be watched.
func (fd *FD) Watch(l *pollfd.ReadyList, v any) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	if fd.pd == nil {
		return ErrUnwatchable
	}
	flags := fd.flags.Load()
	if flags&flagFilled != 0 {
		fd.flags.And(^uint32(flagFilled))
	}
	if err := fd.pd.Watch(l, v); err != nil {
		return convertPollErr(err, fd.isFile)
	}
	fd.flags.Or(flagWatched)
	if flags&(flagDrained|flagFilled) == flagDrained {
		// The last read found nothing left, and every edge since its
		// Prepare is in the gate's Ready, which Watch reports: nothing
		// to look at (noteDrained).
		return nil
	}
	// Readiness from before the Watch raised no edge, or, after a turn
	// that filled a buffer, an edge the drain loop may not have
	// delivered yet: look now. Any edge from here on is reported by the
	// poller; NotifyReady is a no-op if that already happened.
	if ready, err := probeReadable(fd.Sysfd, unix.POLLIN|unix.POLLRDHUP); err == nil && ready {
		fd.pd.NotifyReady()
	}
	return nil
}

// WatchWrite asks l, which watches the descriptor, for a report when it
// is writable, and with holdReads withholds its read reports until the
// next Watch (pollfd.Desc.WatchWrite).
func (fd *FD) WatchWrite(l *pollfd.ReadyList, holdReads bool) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	if fd.pd == nil {
		return ErrUnwatchable
	}
	return convertPollErr(fd.pd.WatchWrite(l, holdReads), fd.isFile)
}

// wantWrite is a write's answer to finding the write lock held with its
// context done, on a watched descriptor: a ReadyList's flush of the output
// it holds writes that way, and must not then wait for good for a write
// edge that the lock's holder, a writer through the descriptor's own
// Write, may take. It records the want (flagWriteWanted), which the
// holder's writeUnlock turns into a report at the list's next WatchWrite
// (pollfd.Desc.NotifyWritable), and looks at the lock again: if it is
// free by now, the holder may have unlocked before the want was recorded,
// and wantWrite reports true for the caller to try the lock again. Either
// the holder sees the want or the caller sees the lock free (both atomics
// are sequentially consistent), so the want is never lost. A writer
// that parks for room on a watched descriptor (flagWriteWaited) has its
// writeUnlock tell the list too: it may have taken every write edge the
// list's output waited for.
func (fd *FD) wantWrite() bool {
	if fd.flags.Load()&flagWatched == 0 {
		return false
	}
	fd.flags.Or(flagWriteWanted)
	return fd.mu.state.Load()&fdmWLock == 0
}

// WatchCookie returns the value l's Watch was given for the descriptor,
// nil if l does not watch it.
func (fd *FD) WatchCookie(l *pollfd.ReadyList) any {
	if fd.pd == nil {
		return nil
	}
	return fd.pd.WatchCookie(l)
}

// ReleaseReads ends a hold of the descriptor's read reports without
// arming it (pollfd.Desc.ReleaseReads).
func (fd *FD) ReleaseReads() {
	if fd.pd != nil {
		fd.pd.ReleaseReads()
	}
}

// NotifyReady reports the watched descriptor to its list now, as a read
// edge would, if it is armed (pollfd.Desc.NotifyReady).
func (fd *FD) NotifyReady() {
	if fd.pd != nil {
		fd.pd.NotifyReady()
	}
}

// IsStream reports whether the descriptor is a byte stream (a stream
// socket or a file): one whose write may be cut anywhere.
func (fd *FD) IsStream() bool { return fd.isStream }

// noteDrained records, on a watched stream socket, whether a read that
// asked for size bytes and got n, or err, left the socket empty: a short
// read of a stream socket takes all it has (a datagram's, a sequenced
// packet's or a terminal's read ends at a boundary instead, and a pipe is
// a File; those, and reads under faults, which may withhold data, are not
// counted), and EAGAIN says so. Add after such a read needs no poll(2):
// Prepare cleared the gate's Ready before the read, so an edge since then
// is in Ready, and Watch reports it. Any later Prepare on the read side
// clears the record.
//
// Not after the peer shut down its writing, hung up or left an error
// (pollfd's hungUp): the data and the FIN, say, came in one edge, the
// short read took the data, and the end of stream, still to be read,
// raises no new edge. Watch then looks, and reports it.
//
// Unless a read since the last Watch filled its buffer (flagFilled): the
// conn is streaming, its next bytes have likely come while the worker
// wrote the last ones back, and their edge is in the kernel's ready list
// but not yet in Ready, which only the drain loop's delivery sets. Then
// Watch looks (one ppoll(2) a turn), and the worker takes the conn again
// at once rather than sleeping until that delivery wakes it
// (docs/DESIGN.md, "ReadyList and ReadyQueue").
func (fd *FD) noteDrained(n, size int, err error) {
	if fd.flags.Load()&flagWatched == 0 || fd.faulted() || !fd.isStream || fd.isFile {
		return
	}
	switch {
	case err == unix.EAGAIN:
		fd.flags.Or(flagDrained)
	case err == nil && n > 0 && n < size:
		if fd.pd == nil || !hungUp(fd.pd) {
			fd.flags.Or(flagDrained)
		}
	case err == nil && n == size && fd.flags.Load()&flagFilled == 0:
		fd.flags.Or(flagFilled)
	}
}

// Unwatch stops the watch Watch started, if any (pollfd.Desc.Unwatch).
func (fd *FD) Unwatch() {
	if fd.pd != nil {
		fd.pd.Unwatch()
		fd.flags.And(^uint32(flagWatched | flagDrained | flagFilled))
	}
}

// probeReadable is Watch's pollNow; tests count its calls.
var probeReadable = pollNow

// pollNow reports whether fd is ready for events, or in an error or
// hang-up state an I/O call would report at once: ppoll(2) with a zero
// timeout. It never blocks, so it is a raw system call (no scheduler
// hand-off), and a lean one: it runs just before a goroutine parks, whose
// stack holds the deepest frame it reached for as long as it stays parked.
//
// A socket whose reading was shut down is readable to poll(2) for good
// (POLLRDHUP), yet a datagram socket's receive then still finds nothing
// (EAGAIN) while no datagram is queued; so for a read with POLLRDHUP and
// no error, a receive that peeks and never waits decides (a stream's
// finds the end of stream, or bytes; a pipe's is refused, ENOTSOCK).
func pollNow(fd int, events int16) (bool, error) {
	pfd := unix.PollFd{Fd: int32(fd), Events: events}
	var zero unix.Timespec
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
			uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return false, errno
		}
		ready := n > 0 && pfd.Revents&(events|unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0
		if ready && events&unix.POLLIN != 0 && pfd.Revents&(unix.POLLRDHUP|unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) == unix.POLLRDHUP {
			return receivable(fd), nil
		}
		return ready, nil
	}
}

// receivable reports whether a receive on fd would not find EAGAIN:
// recv(2) of nothing with MSG_PEEK, which takes nothing from the queue.
func receivable(fd int) bool {
	for {
		_, _, errno := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), 0, 0,
			unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		if errno != unix.EINTR {
			return errno != unix.EAGAIN
		}
	}
}
