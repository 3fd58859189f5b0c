//go:build linux

package gatenet

import (
	"context"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// The context-aware and readiness calls gatenet adds to net's method sets.
// A context bounds only the wait: it starts no goroutine and no timer per
// call (a context that keeps coming back is registered once per
// connection and direction, pollfd/ctxwait.go), leaves the deadlines alone, and the connection stays usable after a
// cancelled call. Its error arrives wrapped as the operation's other
// errors are (errors.Is(err, context.Canceled)). A nil context means
// context.Background().

func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// ReadContext is Read, also returning when ctx is done.
func (c *conn) ReadContext(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	n, err := c.fd.pfd.ReadContext(orBackground(ctx), b)
	if err != nil && err != io.EOF {
		err = c.fd.ioError(ioRead, err)
	}
	return n, err
}

// WriteContext is Write, also returning when ctx is done, with the count
// written so far.
func (c *conn) WriteContext(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	n, err := c.fd.pfd.WriteContext(orBackground(ctx), b)
	if err != nil {
		err = c.fd.ioError(ioWrite, err)
	}
	return n, err
}

// WaitRead parks until the connection is readable — data has arrived, or
// the peer closed (WaitRead returns nil and the next Read gives io.EOF) —
// or until ctx is done, the read deadline passes or the connection is
// closed. It consumes nothing and needs no buffer: a server can hold many
// idle connections with one parked goroutine each and take a buffer from a
// pool only when data is there.
func (c *conn) WaitRead(ctx context.Context) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.pfd.WaitReadable(orBackground(ctx)); err != nil {
		return c.fd.ioError(ioReadPoll, err)
	}
	return nil
}

// WaitWrite parks until the connection can take more data without
// blocking, or until ctx is done, the write deadline passes or the
// connection is closed.
func (c *conn) WaitWrite(ctx context.Context) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.pfd.WaitWritable(orBackground(ctx)); err != nil {
		return c.fd.ioError(ioWritePoll, err)
	}
	return nil
}

// acceptContext takes one connection, waiting no longer than ctx allows.
func (fd *netFD) acceptContext(ctx context.Context) (*netFD, error) {
	var raw unix.RawSockaddrAny
	s, call, err := fd.pfd.AcceptContext(ctx, &raw)
	if err != nil {
		return nil, wrapSyscallError(call, err)
	}
	rsa, err := acceptedSockaddr(s, &raw)
	if err != nil {
		return nil, wrapSyscallError("accept4", err)
	}
	return fd.newAccepted(s, rsa)
}

// AcceptContext is Accept, also returning when ctx is done; the listener
// stays usable.
func (l *TCPListener) AcceptContext(ctx context.Context) (net.Conn, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	fd, err := l.fd.acceptContext(orBackground(ctx))
	if err != nil {
		return nil, l.opError("accept", err)
	}
	return newTCPConn(fd, l.lc.KeepAlive, l.lc.KeepAliveConfig), nil
}

// WaitRead parks until a connection is pending (Accept would not block),
// ctx is done, the deadline passes or the listener is closed.
func (l *TCPListener) WaitRead(ctx context.Context) error {
	if !l.ok() {
		return syscall.EINVAL
	}
	if err := l.fd.pfd.WaitReadable(orBackground(ctx)); err != nil {
		return l.opError("accept", wrapSyscallError("poll", err))
	}
	return nil
}

// AcceptContext is Accept, also returning when ctx is done.
func (l *UnixListener) AcceptContext(ctx context.Context) (net.Conn, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	fd, err := l.fd.acceptContext(orBackground(ctx))
	if err != nil {
		return nil, l.opError("accept", err)
	}
	return newUnixConn(fd), nil
}

// WaitRead parks until a connection is pending, ctx is done, the deadline
// passes or the listener is closed.
func (l *UnixListener) WaitRead(ctx context.Context) error {
	if !l.ok() {
		return syscall.EINVAL
	}
	if err := l.fd.pfd.WaitReadable(orBackground(ctx)); err != nil {
		return l.opError("accept", wrapSyscallError("poll", err))
	}
	return nil
}
