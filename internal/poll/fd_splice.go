//go:build linux

package poll

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// Zero-copy between two descriptors with splice(2), through a pipe, as
// internal/poll's splice_linux.go: drain up to maxSpliceChunk from the
// source into the pipe (under the source's read lock, waiting for data),
// then pump the pipe into the destination (under its write lock, waiting
// for room). Bytes never enter user space.

// maxSpliceChunk is how much one drain moves; the pipe is sized to hold it.
const maxSpliceChunk = 1 << 20

// spliceCalls counts splice(2) calls, for tests.
var spliceCalls atomic.Int64

// SpliceCalls reports how many splice(2) calls Splice has made. It is a
// test hook (the root package's tests reach it through export_test.go), not
// an API.
func SpliceCalls() int64 { return spliceCalls.Load() }

// splicePipe is a pipe kept for reuse; it is returned to the pool only
// empty. A pipe the pool drops is closed by the collector (as
// internal/poll's are, by finalizer).
type splicePipe struct {
	r, w    int
	cleanup runtime.Cleanup
}

var splicePipes = sync.Pool{New: func() any {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil
	}
	// A bigger pipe means fewer round trips; failure (a lower
	// fs.pipe-max-size) only costs speed.
	unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, maxSpliceChunk)
	sp := &splicePipe{r: p[0], w: p[1]}
	sp.cleanup = runtime.AddCleanup(sp, closePipe, p)
	return sp
}}

func closePipe(p [2]int) { unix.Close(p[0]); unix.Close(p[1]) }

func (p *splicePipe) close() {
	p.cleanup.Stop()
	closePipe([2]int{p.r, p.w})
}

// Splice moves up to remain bytes (0: until EOF) from src to dst with
// splice(2), mirroring internal/poll's Splice (which net's
// TCPConn.ReadFrom/WriteTo use). Between two sockets the bytes go
// through a pooled pipe, and what it reports written is what reached dst
// (bytes stranded in the pipe by an error are lost, as net's). When
// either end is a pipe they go straight from one to the other
// (spliceDirect), and an error loses nothing. handled is false when the
// kernel refused the pair before a byte moved: the caller then copies
// through a buffer.
func Splice(dst, src *FD, remain int64) (written int64, err error, handled bool) {
	written, err, handled, _ = SpliceEnds(dst, src, remain)
	return written, err, handled
}

// SpliceEnds is Splice, also saying whether err is the source's (its read
// failed: closed, its deadline, a reset) rather than the destination's.
//
//lint:ignore ST1008 Splice's order, internal/poll's: (written, err, handled), then whose err
func SpliceEnds(dst, src *FD, remain int64) (written int64, err error, handled, srcErr bool) {
	if dst.copyRefused() || src.copyRefused() {
		return 0, nil, false, false
	}
	if src.isPipe() || dst.isPipe() {
		return spliceDirect(dst, src, remain)
	}
	return spliceThroughPipe(src, remain, dst.splicePump)
}

// SpliceToFile moves bytes from src, a stream socket, through a pooled
// pipe into a file the caller reaches through pump (an *os.File's regular
// file or pipe, whose lock the pump takes for each pump only, calling
// PumpFromPipe), until src's end of stream or error: os's spliceToFile,
// for net's TCPConn.WriteTo into an *os.File. It waits for src's data
// holding nothing of the file's, and the pump waits for room holding
// nothing of src's. Its results are SpliceEnds'.
//
//lint:ignore ST1008 Splice's order, internal/poll's: (written, err, handled), then whose err
func SpliceToFile(src *FD, pump func(piper, inPipe int) (int, error)) (written int64, err error, handled, srcErr bool) {
	if src.copyRefused() {
		return 0, nil, false, false
	}
	return spliceThroughPipe(src, 0, pump)
}

// PumpFromPipe moves up to inPipe bytes from the pipe piper into dstfd,
// an *os.File's regular file or pipe the caller holds inside its
// RawConn.Write; full says that dstfd, a pipe, has no room (EAGAIN), for
// the caller to wait for it its own way. A regular file takes every byte
// at once.
func PumpFromPipe(piper, dstfd, inPipe int) (n int, err error, full bool) {
	for n < inPipe {
		spliceCalls.Add(1)
		m, err := unix.Splice(piper, nil, dstfd, nil, inPipe-n, unix.SPLICE_F_NONBLOCK)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return n, nil, true
		case err != nil:
			return n, err, false
		case m == 0:
			return n, io.ErrUnexpectedEOF, false // the pipe held inPipe bytes
		}
		n += int(m)
	}
	return n, nil, false
}

// spliceThroughPipe is SpliceEnds between two descriptors neither of
// which is a pipe: from src into a pooled pipe, and from there into the
// destination with pump, which reports how much of inPipe it moved.
//
//lint:ignore ST1008 Splice's order, internal/poll's: (written, err, handled), then whose err
func spliceThroughPipe(src *FD, remain int64, pump func(piper, inPipe int) (int, error)) (written int64, err error, handled, srcErr bool) {
	return throughPipe(src.spliceDrain, remain, pump)
}

// throughPipe is spliceThroughPipe's loop, with the source's side a
// function: drain moves up to max bytes into pipew, waiting for them, and
// returns 0 at the source's end.
//
//lint:ignore ST1008 Splice's order, internal/poll's: (written, err, handled), then whose err
func throughPipe(drain func(pipew, max int) (int, error), remain int64, pump func(piper, inPipe int) (int, error)) (written int64, err error, handled, srcErr bool) {
	pv := splicePipes.Get()
	if pv == nil {
		return 0, nil, false, false
	}
	p := pv.(*splicePipe)
	for remain == 0 || written < remain {
		max := int64(maxSpliceChunk)
		if remain > 0 {
			max = min(max, remain-written)
		}
		var inPipe int
		inPipe, err = drain(p.w, int(max))
		if inPipe == 0 {
			if written == 0 && notSpliceable(err) {
				splicePipes.Put(p)
				return 0, nil, false, false // this pair cannot splice
			}
			srcErr = err != nil
			break // end of stream (err nil), or the source's error
		}
		n, perr := pump(p.r, inPipe)
		written += int64(n)
		if n < inPipe {
			p.close() // bytes stranded in the pipe: it cannot be reused
			return written, perr, true, false
		}
	}
	splicePipes.Put(p)
	return written, err, true, srcErr
}

// notSpliceable reports whether a splice's error means the kernel does
// not splice this pair (nothing moved): copy through a buffer instead.
func notSpliceable(err error) bool {
	return err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP
}

// isPipe reports whether fd is a pipe or FIFO, which splice(2) can move
// bytes into or out of directly.
func (fd *FD) isPipe() bool {
	if fd.Incref() != nil {
		return false
	}
	defer fd.Decref()
	var st unix.Stat_t
	return unix.Fstat(fd.Sysfd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// spliceDrain moves up to limit bytes from fd into the pipe's write end,
// waiting for fd to be readable.
func (fd *FD) spliceDrain(pipew, limit int) (int, error) {
	if err := fd.readLock(); err != nil {
		return 0, err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, err
	}
	for {
		spliceCalls.Add(1)
		n, err := unix.Splice(fd.Sysfd, nil, pipew, nil, limit, unix.SPLICE_F_NONBLOCK)
		if err == unix.EINTR {
			continue
		}
		if err == nil {
			fd.wakePeer(pollfd.ModeRead)
		}
		if err != unix.EAGAIN {
			return int(max(n, 0)), err
		}
		if !fd.Pollable() {
			return 0, err
		}
		if err := fd.Wait(pollfd.ModeRead); err != nil {
			return 0, err
		}
	}
}

// splicePump moves inPipe bytes from the pipe's read end into fd, waiting
// for room.
func (fd *FD) splicePump(piper, inPipe int) (int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	written := 0
	for inPipe > 0 {
		spliceCalls.Add(1)
		n, err := unix.Splice(piper, nil, fd.Sysfd, nil, inPipe, unix.SPLICE_F_NONBLOCK)
		if err == unix.EINTR {
			continue
		}
		if n > 0 {
			inPipe -= int(n)
			written += int(n)
			fd.wakePeer(pollfd.ModeWrite)
			continue
		}
		if err != unix.EAGAIN {
			return written, err
		}
		if !fd.Pollable() {
			return written, err
		}
		if err := fd.Wait(pollfd.ModeWrite); err != nil {
			return written, err
		}
	}
	return written, nil
}
