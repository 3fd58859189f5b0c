//go:build linux

package poll

import (
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// splice(2) between one of ours and a descriptor another package owns:
// an *os.File's pipe or net's conn, reached inside its RawConn, whose
// callback holds that descriptor's lock and waits for it in the runtime's
// poller. A step here never waits on the foreign end (it says what to
// wait for, and the caller leaves the callback for that), and never holds
// our end's lock while the foreign end's caller waits: so neither end's
// Close or deadline is held up by the other's wait.
//
// poll(2) can call both ends ready while splice finds EAGAIN: when the
// destination filled and drained between the two (another writer shares
// it), which a retry gets past, and at a TCP urgent mark, which splice
// never passes (tcp_read_sock stops before it). A step at the mark, or
// one that found both ready maxAgain times in a row for any other reason,
// says to wait for the source's next edge rather than spin (as net's
// splice always waits after EAGAIN).

// CopyRefused reports whether fd refuses a zero-copy transfer (faults
// attached, a ReadyList watching it: copyRefused). The foreign-end copies
// ask once, before their first step, as Splice does.
func (fd *FD) CopyRefused() bool { return fd.copyRefused() }

// PipeStep says what a SpliceToPipe step left for its caller to do.
type PipeStep int

const (
	StepMoved    PipeStep = iota // bytes moved, or none: the source's end of stream
	StepSrcEmpty                 // the source has nothing: WaitReadable, then step again
	StepSrcStuck                 // the source is readable yet gives nothing (an urgent mark): AwaitReadEdge
	StepDstFull                  // the destination has no room: wait for it, then step again
)

// SpliceToPipe makes one splice(2) of up to maxSpliceChunk bytes from
// src, one of our stream sockets, straight into pipefd, an *os.File's
// pipe, under src's read lock (os's spliceToFile, for net's
// TCPConn.WriteTo into a pipe). A byte leaves src only into the pipe, so
// an error loses nothing.
//
//lint:ignore ST1008 Splice's order: (n, err), then what the caller does next
func SpliceToPipe(pipefd int, src *FD) (n int, err error, step PipeStep) {
	if err := src.readLock(); err != nil {
		return 0, err, StepMoved
	}
	defer src.readUnlock()
	if err := src.Prepare(pollfd.ModeRead); err != nil {
		return 0, err, StepMoved
	}
	for tries := 0; ; tries++ {
		spliceCalls.Add(1)
		m, err := unix.Splice(src.Sysfd, nil, pipefd, nil, maxSpliceChunk, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			src.wakePeer(pollfd.ModeRead)
			return int(m), nil, StepMoved
		case err != unix.EAGAIN:
			return 0, err, StepMoved
		}
		step, err := whyAgain(src.Sysfd, pipefd, tries)
		if step != StepMoved || err != nil {
			return 0, err, step
		}
	}
}

// maxAgain is how many times in a row a step splices again after poll(2)
// found both ends ready. Each retry past the first needs the destination
// refilled by another writer in between, so a copy that gets this far is
// stuck for another reason.
const maxAgain = 16

// whyAgain looks at both ends after a splice from src into dst found
// EAGAIN: StepMoved (none to report) means both are ready now, and the
// step splices again (tries of maxAgain made so far).
func whyAgain(src, dst, tries int) (PipeStep, error) {
	readable, err := pollNow(src, unix.POLLIN|unix.POLLRDHUP)
	if err != nil || !readable {
		return StepSrcEmpty, err
	}
	writable, err := pollNow(dst, unix.POLLOUT)
	if err != nil || !writable {
		return StepDstFull, err
	}
	if tries >= maxAgain || atUrgentMark(src) {
		return StepSrcStuck, nil
	}
	return StepMoved, nil
}

// atUrgentMark reports whether fd, a TCP socket, has its urgent mark
// next (SIOCATMARK); false for anything else.
func atUrgentMark(fd int) bool {
	at, err := unix.IoctlGetInt(fd, unix.SIOCATMARK)
	return err == nil && at != 0
}

// AwaitReadEdge parks until fd's next read edge, its read deadline or
// Close: for a source that poll(2) calls readable and that still gives
// nothing (StepSrcStuck), where WaitReadable would return at once.
func (fd *FD) AwaitReadEdge() error {
	if err := fd.readLock(); err != nil {
		return err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return err
	}
	return fd.Wait(pollfd.ModeRead)
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

// SpliceFromFD makes one splice(2) of up to max bytes from srcfd, net's
// stream socket the caller holds inside its RawConn.Read, into dst:
// straight into a pipe (pipe true), losing nothing on an error; into a
// regular file through a pooled pipe, as os's spliceToFile. It never
// waits: step says what for, the source (StepSrcEmpty, StepSrcStuck: the
// caller's RawConn waits for its next edge) or room in the pipe
// (StepDstFull: the caller leaves the RawConn, so that the source's
// Close is not held up, and waits with dst's WaitWritable). n == 0 at
// StepMoved with no err is srcfd's end of stream. handled is false, and
// nothing moved, when the kernel refused the pair.
//
//lint:ignore ST1008 Splice's order: (n, err), then what the caller does next
func SpliceFromFD(dst *FD, srcfd, max int, pipe bool) (n int, err error, step PipeStep, handled bool) {
	if pipe {
		n, err, step = spliceIntoPipe(dst, srcfd, max)
	} else {
		n, err, step = spliceIntoFile(dst, srcfd, max)
	}
	if n == 0 && notSpliceable(err) {
		return 0, nil, StepMoved, false
	}
	return n, err, step, true
}

// spliceIntoPipe is SpliceFromFD into one of our pipes, under its write
// lock.
//
//lint:ignore ST1008 SpliceFromFD's order
func spliceIntoPipe(dst *FD, srcfd, max int) (n int, err error, step PipeStep) {
	if err := dst.writeLock(); err != nil {
		return 0, err, StepMoved
	}
	defer dst.writeUnlock()
	if err := dst.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err, StepMoved
	}
	for tries := 0; ; tries++ {
		spliceCalls.Add(1)
		m, err := unix.Splice(srcfd, nil, dst.Sysfd, nil, max, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			dst.wakePeer(pollfd.ModeWrite)
			return int(m), nil, StepMoved
		case err != unix.EAGAIN:
			return 0, err, StepMoved
		}
		step, err := whyAgain(srcfd, dst.Sysfd, tries)
		if step != StepMoved || err != nil {
			return 0, err, step
		}
	}
}

// spliceIntoFile is SpliceFromFD into a regular file, through a pooled
// pipe that a file empties at once (it takes every byte, or fails).
//
//lint:ignore ST1008 SpliceFromFD's order
func spliceIntoFile(dst *FD, srcfd, max int) (n int, err error, step PipeStep) {
	pv := splicePipes.Get()
	if pv == nil {
		return 0, unix.EINVAL, StepMoved // no pipe to splice through: copy through a buffer
	}
	p := pv.(*splicePipe)
	var inPipe int64
	for {
		spliceCalls.Add(1)
		inPipe, err = unix.Splice(srcfd, nil, p.w, nil, max, unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil || inPipe == 0 {
		splicePipes.Put(p)
		if err == unix.EAGAIN {
			return 0, nil, StepSrcEmpty
		}
		return 0, err, StepMoved
	}
	n, err = dst.splicePump(p.r, int(inPipe))
	if n < int(inPipe) {
		p.close() // bytes stranded in the pipe: it cannot be reused
		return n, err, StepMoved
	}
	splicePipes.Put(p)
	return n, nil, StepMoved
}
