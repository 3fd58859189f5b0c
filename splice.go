//go:build linux

package gatenet

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
)

// spliceEnd returns the descriptor of a gatenet stream socket or pipe end
// that splice(2) can use, or nil.
func spliceEnd(x any) *poll.FD {
	switch v := x.(type) {
	case *TCPConn:
		if v.ok() {
			return &v.fd.pfd
		}
	case tcpConnWithoutWriteTo:
		if v.ok() {
			return &v.fd.pfd
		}
	case *UnixConn:
		if v.ok() && v.fd.sotype == unix.SOCK_STREAM {
			return &v.fd.pfd
		}
	case *File:
		if v != nil && v.fd.Pollable() {
			return v.fd
		}
	}
	return nil
}

// spliceFrom splices from r, a gatenet stream conn or pipe (or one inside
// an *io.LimitedReader, whose N is updated), into dst. It returns
// splice's error as it is, and whether it is the source's (srcErr) and
// the source itself.
//
//lint:ignore ST1008 poll.SpliceEnds' order, then the source
func spliceFrom(dst *poll.FD, r io.Reader) (n int64, err error, handled, srcErr bool, src io.Reader) {
	var remain int64
	lr, ok := r.(*io.LimitedReader)
	if ok {
		remain, r = lr.N, lr.R
		if remain <= 0 {
			return 0, nil, true, false, r
		}
	}
	end := spliceEnd(r)
	if end == nil {
		// One of net's conns, by net's own types (net's ReadFrom splices
		// from those only; a user's type embedding one has its Read run).
		if rc, _ := netOwnConn(r); rc != nil && !dst.CopyRefused() {
			n, err, handled = spliceFromRaw(dst, rc, remain)
			if lr != nil {
				lr.N -= n
			}
			return n, err, handled, false, r
		}
		return 0, nil, false, false, r
	}
	n, err, handled, srcErr = poll.SpliceEnds(dst, end, remain)
	if lr != nil {
		lr.N -= n
	}
	return n, err, handled, srcErr, r
}

// fileCopyError is the error of a splice between two gatenet Files, where
// os copies through a buffer (it splices only to and from sockets): the
// failing end's own Read's or Write's error, its errno bare.
func fileCopyError(src, dst *File, err error, srcErr bool) error {
	if srcErr {
		return src.wrapErr("read", err)
	}
	return dst.wrapErr("write", err)
}

// pipeToConnError is the error of a splice from the File src (a pipe)
// into the stream conn fd, shaped as the standard library reports the
// copy it makes for that pair: neither net nor os splices from a pipe into
// a socket, so the bytes go through a buffer and the error is the failing
// end's own, src's Read error or the conn's Write error. A TCP conn's
// ReadFrom wraps it in its "readfrom" error, as net's.
func pipeToConnError(fd *netFD, src *File, err error, srcErr bool) error {
	switch {
	case err == nil || err == io.EOF:
		return err
	case srcErr:
		return src.wrapErr("read", err)
	}
	return fd.ioError(ioWrite, err)
}

// tcpConnWithoutWriteTo is net's: a *TCPConn whose WriteTo is hidden (the
// two embedded WriteTo methods are ambiguous, so neither is promoted), so
// that TCPConn.WriteTo can hand itself to io.Copy without recursing — and
// still be recognised by spliceEnd, as net's spliceFrom recognises it.
type tcpConnWithoutWriteTo struct {
	noWriteTo //lint:ignore U1000 used for its method, which hides TCPConn's
	*TCPConn
}

// noWriteTo hides another WriteTo method; it is never called.
type noWriteTo struct{}

//lint:ignore U1000 never called: it only makes WriteTo ambiguous
func (noWriteTo) WriteTo(io.Writer) (int64, error) { panic("can't happen") }

// spliceToOSFile splices src, a stream socket, into f until src's end, as
// os's spliceToFile does for net's conns: f a regular file not opened for
// appending (splice(2) refuses those) or a pipe, else not handled. An
// error is f's "write" *fs.PathError around splice's, the socket's own
// included, or f's own once f is closed.
func spliceToOSFile(f *os.File, src *poll.FD) (n int64, err error, handled bool) {
	if f == nil {
		return 0, nil, false
	}
	st, serr := f.Stat()
	if serr != nil {
		if !errors.Is(serr, os.ErrClosed) {
			return 0, nil, false
		}
		// os's splice reads src first: done at its end, else f's error.
		atEnd, err := src.AwaitSource()
		return 0, intoClosedFile(f.Name(), atEnd, err), true
	}
	rc, serr := f.SyscallConn()
	if serr != nil {
		return 0, nil, false
	}
	if !st.Mode().IsRegular() && st.Mode()&fs.ModeNamedPipe == 0 {
		return 0, nil, false // neither a regular file nor a pipe or FIFO
	}
	n, err, handled, cerr := spliceToRaw(rc, src)
	if !handled {
		return 0, nil, false
	}
	if err == nil && cerr != nil {
		if _, werr := f.Write(nil); werr != nil {
			return n, werr, true // f closed meanwhile: its own error, as os's
		}
		err = cerr // its write deadline
	}
	if err == nil {
		return n, nil, true
	}
	return n, &fs.PathError{Op: "write", Path: f.Name(), Err: wrapSyscallError("splice", err)}, true
}

// intoClosedFile is the error of os's splice from a stream socket into
// the file name, closed already, once it looked at the socket (os's reads
// the socket first): the socket's own error srcErr, nil at its end
// (atEnd), else the closed file's. The error is the file's "write"
// *fs.PathError, as os's.
func intoClosedFile(name string, atEnd bool, srcErr error) error {
	switch {
	case srcErr != nil:
		return &fs.PathError{Op: "write", Path: name, Err: wrapSyscallError("splice", srcErr)}
	case atEnd:
		return nil
	}
	return &fs.PathError{Op: "write", Path: name, Err: os.ErrClosed}
}

// spliceToRaw splices src into what is behind rc: an *os.File's regular
// file or pipe, or net's conn. The bytes go through a pooled pipe
// (poll.SpliceToFile), as os's and net's splice: the drain waits for src
// on its gate holding nothing of the other end's, and each pump takes that
// end's lock (rc.Write) and waits for room in the runtime's poller holding
// nothing of src's (a pipe in blocking mode, which the runtime cannot
// poll, in poll(2), as a write to it would). Not a file opened for
// appending: splice(2) refuses those. cerr is rc.Write's error.
func spliceToRaw(rc syscall.RawConn, src *poll.FD) (n int64, err error, handled bool, cerr error) {
	var fl int
	ferr := errors.ErrUnsupported
	if cerr := rc.Control(func(fd uintptr) { fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); cerr != nil || ferr != nil || fl&unix.O_APPEND != 0 {
		return 0, nil, false, nil
	}
	blocking := fl&unix.O_NONBLOCK == 0
	n, err, handled, _ = poll.SpliceToFile(src, func(piper, inPipe int) (int, error) {
		moved := 0
		var perr error
		if werr := rc.Write(func(fd uintptr) bool {
			for moved < inPipe {
				m, err, full := poll.PumpFromPipe(piper, int(fd), inPipe-moved)
				moved += m
				switch {
				case err != nil:
					perr = err
					return true
				case full && !blocking:
					return false // wait for room, then pump on
				case full:
					if perr = poll.AwaitWritable(int(fd)); perr != nil {
						return true
					}
				}
			}
			return true
		}); werr != nil {
			cerr = werr
			return moved, werr
		}
		return moved, perr
	})
	if cerr != nil {
		err = nil // rc.Write's: spliceToOSFile shapes it
	}
	return n, err, handled, cerr
}

// spliceFromStdConn splices r, one of net's own stream conns (or an
// *io.LimitedReader of one, whose N it updates), into f, a pipe or a
// regular file not opened for appending, until r's end: os's spliceToFile,
// which reaches net's conns' descriptors (gatenet's conns splice in
// ReadFrom's own path). The bytes go through a pooled pipe
// (poll.SpliceFrom): the drain waits for data in r's poller (its
// RawConn.Read) holding nothing of f's, the pump for room on f's gate
// holding nothing of r's. An error is f's "write" *fs.PathError around
// splice's, or around r's own closed or deadline error, as os's. handled
// false: r or f is not such a descriptor, or the kernel refused the pair
// before a byte moved.
func (f *File) spliceFromStdConn(r io.Reader) (n int64, err error, handled bool) {
	var remain int64 // 0: to the end
	lr, limited := r.(*io.LimitedReader)
	if limited {
		if remain, r = lr.N, lr.R; remain <= 0 {
			return 0, nil, false
		}
	}
	rc, _ := stdStreamConn(r)
	if rc == nil || f.appendMode || f.fd.CopyRefused() {
		return 0, nil, false
	}
	st, serr := f.Stat()
	if serr != nil {
		if !errors.Is(serr, os.ErrClosed) {
			return 0, nil, false
		}
		// os's splice reads r first: done at its end, else f's error.
		var state poll.SourceState
		var perr error
		if rerr := rc.Read(func(fd uintptr) bool {
			state, perr = poll.PeekSource(int(fd))
			return perr != nil || state != poll.SourceIdle
		}); rerr != nil {
			perr = unwrapRawError(rerr)
		}
		return 0, intoClosedFile(f.name, state == poll.SourceAtEnd, perr), true
	}
	pipe := st.Mode()&fs.ModeNamedPipe != 0
	if !pipe && !st.Mode().IsRegular() {
		return 0, nil, false
	}
	n, err, handled = spliceFromRaw(f.fd, rc, remain)
	if limited {
		lr.N = remain - n
	}
	if !handled {
		return 0, nil, false
	}
	return n, f.wrapErr("write", wrapSyscallError("splice", err)), true
}

// spliceFromRaw splices up to remain bytes (0: to the end) from net's
// stream conn behind rc into dst, through a pooled pipe (poll.SpliceFrom):
// the drain waits for data in the conn's poller (rc.Read) holding nothing
// of dst's, the pump for room on dst's gate holding nothing of the
// conn's. An error of rc's is the one under net's "raw-read" wrapper, as
// os's and net's own splice, which reach the descriptor, report it.
func spliceFromRaw(dst *poll.FD, rc syscall.RawConn, remain int64) (n int64, err error, handled bool) {
	var rerr error
	n, err, handled, _ = poll.SpliceFrom(dst, remain, func(pipew, max int) (int, error) {
		var m int
		var derr error
		if rerr = rc.Read(func(fd uintptr) bool {
			m, derr = poll.DrainInto(int(fd), pipew, max)
			return derr != unix.EAGAIN // else wait for data
		}); rerr != nil {
			return 0, rerr
		}
		return m, derr
	})
	if err != nil && err == rerr {
		err = unwrapRawError(rerr)
	}
	return n, err, handled
}
