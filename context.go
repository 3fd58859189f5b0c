//go:build linux

package gatenet

import (
	"context"
	"io"
	"syscall"
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
