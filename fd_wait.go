//go:build linux

package gatenet

import (
	"context"

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
func (fd *descriptor) WaitReadable(ctx context.Context) error {
	if err := fd.readLock(); err != nil {
		return err
	}
	defer fd.readUnlock()
	return fd.waitReady(ctx, pollfd.ModeRead, unix.POLLIN|unix.POLLRDHUP)
}

// WaitWritable is WaitReadable for room to write, under the write lock.
func (fd *descriptor) WaitWritable(ctx context.Context) error {
	if err := fd.writeLock(); err != nil {
		return err
	}
	defer fd.writeUnlock()
	return fd.waitReady(ctx, pollfd.ModeWrite, unix.POLLOUT)
}

// waitReady: fail fast as an I/O call would (closed, expired deadline,
// done context), then look at the descriptor's state now with poll(2) —
// readiness that arrived before this call raised no new edge — and park
// for the next edge only if it is not ready.
func (fd *descriptor) waitReady(ctx context.Context, mode pollfd.Mode, events int16) error {
	if fd.pd == nil {
		return nil // epoll refused it (a regular file): always ready, as poll(2) says
	}
	if err := fd.prepare(mode); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	ready, err := pollNow(fd.sysfd, events)
	if err != nil || ready {
		return err
	}
	// Any readiness from here on is a new edge, which wakes the gate.
	return fd.waitContext(ctx, mode)
}

// pollNow reports whether fd is ready for events, or in an error or
// hang-up state an I/O call would report at once (poll(2), zero timeout).
func pollNow(fd int, events int16) (bool, error) {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return false, err
		}
		return n > 0 && pfd[0].Revents&(events|unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0, nil
	}
}
