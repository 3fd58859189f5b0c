//go:build linux

package poll

import (
	"golang.org/x/sys/unix"
)

// splice(2) between one of ours and a descriptor another package owns:
// an *os.File's pipe or regular file, or net's conn, reached inside its
// RawConn, whose callback holds that descriptor's lock and waits for it
// in the runtime's poller. As os's and net's own splice, the bytes go
// through a pooled pipe (throughPipe): the drain holds only the source's
// lock, the pump only the destination's, so neither end's Close, deadline
// or other callers wait on the other end (as a straight splice, needing
// both locks at once, would make them).

// CopyRefused reports whether fd refuses a zero-copy transfer (faults
// attached, a ReadyList watching it: copyRefused). The copies with a
// foreign end ask once, as they begin, as Splice does.
func (fd *FD) CopyRefused() bool { return fd.copyRefused() }

// SpliceFrom moves up to remain bytes (0: to the end) from a source the
// caller reaches through drain into dst, one of ours, through a pooled
// pipe: os's spliceToFile, for an *os.File's ReadFrom of net's conn.
// drain moves up to max bytes into pipew, waiting for them as it must
// (DrainInto inside net's RawConn.Read), and returns 0 at the source's
// end; the pump takes dst's write lock and waits for room on its gate.
// Its results are SpliceEnds'.
//
//lint:ignore ST1008 Splice's order, internal/poll's: (written, err, handled), then whose err
func SpliceFrom(dst *FD, remain int64, drain func(pipew, max int) (int, error)) (written int64, err error, handled, srcErr bool) {
	if dst.copyRefused() {
		return 0, nil, false, false
	}
	return throughPipe(drain, remain, dst.splicePump)
}

// DrainInto makes one splice(2) of up to limit bytes from srcfd, a stream
// socket the caller holds, into pipew: EAGAIN when srcfd has nothing,
// for the caller to wait for it its own way (the splice stops at a TCP
// urgent mark, which it never passes: EAGAIN there too, and a wait for
// the next edge, as net's).
func DrainInto(srcfd, pipew, limit int) (int, error) {
	for {
		spliceCalls.Add(1)
		n, err := unix.Splice(srcfd, nil, pipew, nil, limit, unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return int(max(n, 0)), err
		}
	}
}

// AwaitWritable blocks the thread in poll(2) until fd, a descriptor in
// blocking mode (a pipe the runtime does not poll), has room: as a write
// to it would block.
func AwaitWritable(fd int) error {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		_, err := unix.Poll(pfd, -1)
		if err != unix.EINTR {
			return err
		}
	}
}
