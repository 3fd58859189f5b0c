//go:build linux

package gatenet

import (
	"io"

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
// an *io.LimitedReader, whose N is updated), into dst.
func spliceFrom(dst *poll.FD, r io.Reader) (int64, error, bool) {
	var remain int64
	lr, ok := r.(*io.LimitedReader)
	if ok {
		remain, r = lr.N, lr.R
		if remain <= 0 {
			return 0, nil, true
		}
	}
	src := spliceEnd(r)
	if src == nil {
		return 0, nil, false
	}
	n, err, handled := poll.Splice(dst, src, remain)
	if lr != nil {
		lr.N -= n
	}
	return n, wrapSyscallError("splice", err), handled
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
