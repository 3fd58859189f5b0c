//go:build linux

package poll

import (
	"context"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// splice(2) straight from src to dst, which the kernel allows when either
// is a pipe. A byte leaves src only into dst, so a copy that fails on
// either end loses nothing: the source keeps what dst did not take, as
// os's copy through a buffer keeps all but that buffer, where draining
// into a pooled pipe first would strand up to maxSpliceChunk.
//
// One splice call needs both ends ready: data in src and room in dst.
// Each step takes dst's write lock, then src's read lock if it is free;
// if another reader holds src's, the step lets go of dst's, waits for
// src's alone and begins again, so that it never waits for one lock
// holding the other (dst's Close would wait on src's reader). Then it
// prepares both and splices. A dst that fails its lock or its Prepare
// (closed, past its deadline) ends the copy only once src has bytes for
// it (sourceFirst): net's and os's copies read the source before they
// write, so at src's end such a copy is done with no error, and while
// src is idle it waits for src. EAGAIN does not say which end
// was not ready, so poll(2) looks (src first); the step then lets go of
// the ready end's lock and waits on the other's gate under its own lock,
// as a Read or a Write parked there would. An edge that came after the
// Prepare wakes it; a wake finding both ready retries. Between steps both
// locks are free, so another goroutine's Write to dst, or Read of src,
// goes in between chunks as with io.Copy.

// spliceDirect is SpliceEnds for a pair with a pipe in it.
//
//lint:ignore ST1008 SpliceEnds' order
func spliceDirect(dst, src *FD, remain int64) (written int64, err error, handled, srcErr bool) {
	for remain == 0 || written < remain {
		max := int64(maxSpliceChunk)
		if remain > 0 {
			max = min(max, remain-written)
		}
		n, again, err, srcErr := spliceStep(dst, src, int(max))
		written += int64(n)
		switch {
		case err != nil:
			if written == 0 && notSpliceable(err) {
				return 0, nil, false, false // this pair cannot splice
			}
			return written, err, true, srcErr
		case n == 0 && !again:
			return written, nil, true, false // src is at its end
		}
	}
	return written, nil, true, false
}

// spliceStep makes one splice of up to max bytes from src to dst under
// both locks, or, if neither moved anything because an end was not ready,
// waits for that end and reports again. srcErr says an error is src's.
func spliceStep(dst, src *FD, max int) (n int, again bool, err error, srcErr bool) {
	if err := dst.writeLock(); err != nil {
		return sourceFirst(src, err, false)
	}
	if err := src.readLockContext(tryNow); err != nil {
		// src's lock is another reader's: wait for it holding nothing of
		// dst's, so that dst's Close and other writers wait on neither.
		dst.writeUnlock()
		if err != tryNow.Err() {
			return 0, false, err, true
		}
		if err := src.readLock(); err != nil {
			return 0, false, err, true
		}
		src.readUnlock()
		return 0, true, nil, false
	}
	dstLocked, srcLocked := true, true
	defer func() {
		if srcLocked {
			src.readUnlock()
		}
		if dstLocked {
			dst.writeUnlock()
		}
	}()
	if err := dst.Prepare(pollfd.ModeWrite); err != nil {
		dst.writeUnlock()
		dstLocked, srcLocked = false, false // sourceFirst lets go of src's
		return sourceFirst(src, err, true)
	}
	if err := src.Prepare(pollfd.ModeRead); err != nil {
		return 0, false, err, true
	}
	for tries := 0; ; tries++ {
		spliceCalls.Add(1)
		m, err := unix.Splice(src.Sysfd, nil, dst.Sysfd, nil, max, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			src.wakePeer(pollfd.ModeRead)
			dst.wakePeer(pollfd.ModeWrite)
			return int(m), false, nil, false
		case err != unix.EAGAIN:
			return 0, false, err, src.owns(err, dst)
		}
		wait, perr := whyAgain(src.Sysfd, dst.Sysfd, tries)
		switch {
		case perr != nil:
			return 0, false, perr, wait == waitSrc
		case wait == waitSrc: // for src's next edge
			dst.writeUnlock()
			dstLocked = false
			if !src.Pollable() {
				return 0, false, err, true
			}
			if err := src.Wait(pollfd.ModeRead); err != nil {
				return 0, false, err, true
			}
			return 0, true, nil, false
		case wait == waitDst: // for room
			src.readUnlock()
			srcLocked = false
			if !dst.Pollable() {
				return 0, false, err, false
			}
			if err := dst.Wait(pollfd.ModeWrite); err != nil {
				return 0, false, err, false
			}
			return 0, true, nil, false
		}
		// Both ready by now: splice again.
	}
}

// owns reports whether err, from a splice of fd (the source) into dst,
// is the source's: EPIPE is the destination's (its reader is gone), as is
// EBADF unless the source is not open for reading (the wrong end of a
// pipe); any other error is the end that is a socket's, the destination's
// between two pipes.
func (fd *FD) owns(err error, dst *FD) bool {
	switch err {
	case unix.EPIPE:
		return false
	case unix.EBADF:
		mode, ferr := unix.FcntlInt(uintptr(fd.Sysfd), unix.F_GETFL, 0)
		return ferr == nil && mode&unix.O_ACCMODE == unix.O_WRONLY
	}
	return dst.isPipe() && !fd.isPipe()
}

// tryNow is a context done already: a lock taken with it is taken only
// if free (rwlockContext returns its error rather than wait).
var tryNow = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Which end a splice that found EAGAIN waits for (whyAgain).
const (
	waitNone = iota // both ready: splice again
	waitSrc
	waitDst
)

// maxAgain is how many times in a row a splice is made again after
// poll(2) found both ends ready. Each retry past the first needs the
// destination refilled by another writer in between, so a splice that
// gets this far is stuck for another reason and waits for the source's
// next edge (as net's splice always does after EAGAIN) rather than spin.
const maxAgain = 16

// whyAgain looks at both ends after a splice from src into dst found
// EAGAIN, which does not say which end was not ready. poll(2) can call
// both ready when dst filled and drained between the two (a retry gets
// past that) and at a TCP urgent mark, which splice never passes
// (tcp_read_sock stops before it): src waits for its next edge there.
// tries is how many retries were made so far.
func whyAgain(src, dst, tries int) (int, error) {
	readable, err := pollNow(src, unix.POLLIN|unix.POLLRDHUP)
	if err != nil || !readable {
		return waitSrc, err
	}
	writable, err := pollNow(dst, unix.POLLOUT)
	if err != nil || !writable {
		return waitDst, err
	}
	if tries >= maxAgain || atUrgentMark(src) {
		return waitSrc, nil
	}
	return waitNone, nil
}

// atUrgentMark reports whether fd, a TCP socket, has its urgent mark
// next (SIOCATMARK); false for anything else.
func atUrgentMark(fd int) bool {
	at, err := unix.IoctlGetInt(fd, unix.SIOCATMARK)
	return err == nil && at != 0
}
