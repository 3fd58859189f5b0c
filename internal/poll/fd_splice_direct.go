//go:build linux

package poll

import (
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
// Each step takes dst's write lock, then src's read lock (dst first, as
// os's copy_file_range does: a closed destination fails before the source
// is touched), prepares both and splices. EAGAIN does not say which end
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
		return 0, false, err, false
	}
	if err := src.readLock(); err != nil {
		dst.writeUnlock()
		return 0, false, err, true
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
		return 0, false, err, false
	}
	if err := src.Prepare(pollfd.ModeRead); err != nil {
		return 0, false, err, true
	}
	for {
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
		readable, perr := pollNow(src.Sysfd, unix.POLLIN|unix.POLLRDHUP)
		if perr != nil {
			return 0, false, perr, true
		}
		if !readable {
			dst.writeUnlock()
			dstLocked = false
			if !src.Pollable() {
				return 0, false, err, true
			}
			if err := src.Wait(pollfd.ModeRead); err != nil {
				return 0, false, err, true
			}
			return 0, true, nil, false
		}
		writable, perr := pollNow(dst.Sysfd, unix.POLLOUT)
		if perr != nil {
			return 0, false, perr, false
		}
		if !writable {
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

// SpliceToPipe makes one splice(2) of up to maxSpliceChunk bytes from src, a stream
// socket, straight into pipefd, a pipe's write end the caller holds (an
// *os.File's, inside its RawConn.Write): os's spliceToFile, for net's
// TCPConn.WriteTo into a pipe. It waits, under src's read lock, while src
// has nothing; it returns full when the pipe has no room, for the caller
// to wait on the pipe its own way (pollable false: the pipe is in
// blocking mode, and the splice waits for room in the kernel, as a write
// to it would). n == 0 with neither err nor full is src's end of stream.
// A byte leaves src only into the pipe, so an error loses nothing.
// handled is false, and nothing moved, when src refuses (copyRefused) or
// the kernel refused the pair.
//
//lint:ignore ST1008 Splice's order: (n, err), then what the caller does next
func SpliceToPipe(pipefd int, src *FD, pollable bool) (n int, err error, full, handled bool) {
	if src.copyRefused() {
		return 0, nil, false, false
	}
	n, err, full = spliceToPipe(pipefd, src, pollable)
	if n == 0 && notSpliceable(err) {
		return 0, nil, false, false
	}
	return n, err, full, true
}

func spliceToPipe(pipefd int, src *FD, pollable bool) (n int, err error, full bool) {
	if err := src.readLock(); err != nil {
		return 0, err, false
	}
	defer src.readUnlock()
	if err := src.Prepare(pollfd.ModeRead); err != nil {
		return 0, err, false
	}
	flags := 0
	if pollable {
		flags = unix.SPLICE_F_NONBLOCK
	}
	for {
		spliceCalls.Add(1)
		m, err := unix.Splice(src.Sysfd, nil, pipefd, nil, maxSpliceChunk, flags)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			src.wakePeer(pollfd.ModeRead)
			return int(m), nil, false
		case err != unix.EAGAIN:
			return 0, err, false
		}
		readable, perr := pollNow(src.Sysfd, unix.POLLIN|unix.POLLRDHUP)
		if perr != nil {
			return 0, perr, false
		}
		if !readable {
			if !src.Pollable() {
				return 0, err, false
			}
			if err := src.Wait(pollfd.ModeRead); err != nil {
				return 0, err, false
			}
			continue
		}
		if !pollable {
			continue // the splice waits for room itself
		}
		writable, perr := pollNow(pipefd, unix.POLLOUT)
		if perr != nil {
			return 0, perr, false
		}
		if !writable {
			return 0, nil, true
		}
		// Both ready by now: splice again.
	}
}

// SpliceFromFD makes one splice(2) of up to max bytes from srcfd, a
// stream socket the caller holds (one of net's own conns, inside its
// RawConn.Read), into dst: straight into a pipe (pipe true), whose room
// it waits for under dst's write lock, losing nothing on an error; into
// a regular file through a pooled pipe, as os's spliceToFile. It returns
// empty when srcfd has nothing, for the caller to wait on it its own way;
// n == 0 with neither err nor empty is srcfd's end of stream. handled is
// false, and nothing moved, when dst refuses (copyRefused) or the kernel
// refused the pair.
//
//lint:ignore ST1008 Splice's order: (n, err), then what the caller does next
func SpliceFromFD(dst *FD, srcfd, max int, pipe bool) (n int, err error, empty, handled bool) {
	if dst.copyRefused() {
		return 0, nil, false, false
	}
	if pipe {
		n, err, empty = spliceIntoPipe(dst, srcfd, max)
	} else {
		n, err, empty = spliceIntoFile(dst, srcfd, max)
	}
	if n == 0 && notSpliceable(err) {
		return 0, nil, false, false
	}
	return n, err, empty, true
}

// spliceIntoPipe is SpliceFromFD into a pipe.
func spliceIntoPipe(dst *FD, srcfd, max int) (n int, err error, empty bool) {
	if err := dst.writeLock(); err != nil {
		return 0, err, false
	}
	defer dst.writeUnlock()
	if err := dst.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err, false
	}
	for {
		spliceCalls.Add(1)
		m, err := unix.Splice(srcfd, nil, dst.Sysfd, nil, max, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == nil:
			dst.wakePeer(pollfd.ModeWrite)
			return int(m), nil, false
		case err != unix.EAGAIN:
			return 0, err, false
		}
		readable, perr := pollNow(srcfd, unix.POLLIN|unix.POLLRDHUP)
		if perr != nil {
			return 0, perr, false
		}
		if !readable {
			return 0, nil, true
		}
		writable, perr := pollNow(dst.Sysfd, unix.POLLOUT)
		if perr != nil {
			return 0, perr, false
		}
		if !writable {
			if !dst.Pollable() {
				return 0, err, false
			}
			if err := dst.Wait(pollfd.ModeWrite); err != nil {
				return 0, err, false
			}
		}
		// Both ready by now: splice again.
	}
}

// spliceIntoFile is SpliceFromFD into a regular file, through a pooled
// pipe that a file empties at once (it takes every byte, or fails).
func spliceIntoFile(dst *FD, srcfd, max int) (n int, err error, empty bool) {
	pv := splicePipes.Get()
	if pv == nil {
		return 0, unix.EINVAL, false // no pipe to splice through: copy through a buffer
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
			return 0, nil, true
		}
		return 0, err, false
	}
	n, err = dst.splicePump(p.r, int(inPipe))
	if n < int(inPipe) {
		p.close() // bytes stranded in the pipe: it cannot be reused
		return n, err, false
	}
	splicePipes.Put(p)
	return n, nil, false
}
