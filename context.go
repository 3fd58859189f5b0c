//go:build linux

package gatenet

import (
	"context"
	"io"
	"syscall"
)

// The context-aware and readiness calls gatenet adds to net's method sets.
// A context bounds the call's waits: for data or room, and behind another
// goroutine's call on the same side (a Read parked on an idle conn holds
// the read side, as net's does). It starts no goroutine and no timer per
// call: a context that keeps coming back is registered once per
// connection and direction (one short-lived goroutine, and one more, the
// AfterFunc's, if it is cancelled while registered: pollfd/ctxwait.go). It
// leaves the deadlines alone, and the connection stays usable after a
// cancelled call. Its error arrives wrapped as the operation's other
// errors are (errors.Is(err, context.Canceled)). A nil context means
// context.Background().

// ContextIO is what gatenet adds to a conn's or a File's method set:
// reads and writes bounded by a context, and waits for readiness that
// consume nothing. *TCPConn, *UDPConn, *UnixConn, *IPConn and *File
// implement it; listeners do not (they have AcceptContext and WaitRead).
// Listen, Dial and Accept return net.Listener and net.Conn, so get it with
// a type assertion:
//
//	c, err := ln.Accept()
//	…
//	cio := c.(gatenet.ContextIO) // or c.(*gatenet.TCPConn) for TCP's own methods too
//
// A cancelled or expired context ends the call with the error shape of the
// operation's other errors wrapping ctx.Err(): a *net.OpError (Op "read"
// or "write") from a conn, a *fs.PathError from a File, for which
// errors.Is(err, context.Canceled) or errors.Is(err,
// context.DeadlineExceeded) holds — never os.ErrDeadlineExceeded, which
// stays the deadlines' error. ReadContext and WriteContext with a context
// already done still make their system call and fail only where they
// would park: a ReadContext with a cancelled context returns the data
// that is there (or io.EOF) and never blocks, which is how a ReadyQueue
// worker reads once. WaitRead and WaitWrite with a context already done
// fail at once. Off Linux the interface exists but nothing implements it:
// the assertion fails (ok is false).
type ContextIO interface {
	// ReadContext is Read, also returning when ctx is done.
	ReadContext(ctx context.Context, b []byte) (int, error)
	// WriteContext is Write, also returning when ctx is done, with the
	// count written so far.
	WriteContext(ctx context.Context, b []byte) (int, error)
	// WaitRead parks until a Read would not block (data, end of file or
	// an error is there), ctx is done, the read deadline passes or the
	// descriptor is closed; it consumes nothing.
	WaitRead(ctx context.Context) error
	// WaitWrite parks until a Write would not block, ctx is done, the
	// write deadline passes or the descriptor is closed.
	WaitWrite(ctx context.Context) error
}

var (
	_ ContextIO = (*TCPConn)(nil)
	_ ContextIO = (*UDPConn)(nil)
	_ ContextIO = (*UnixConn)(nil)
	_ ContextIO = (*IPConn)(nil)
	_ ContextIO = (*File)(nil)
)

func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// ReadContext is Read, also returning when ctx is done: then with a
// *net.OpError (Op "read") wrapping ctx.Err(), not os.ErrDeadlineExceeded.
// A context already done fails only where the read would park.
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
// written so far and a *net.OpError (Op "write") wrapping ctx.Err().
func (c *conn) WriteContext(ctx context.Context, b []byte) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	if c.fd.bubbleDgram {
		return c.writeInBubble(orBackground(ctx), b)
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
// pool only when data is there. A done context gives a *net.OpError (Op
// "read") wrapping ctx.Err(), at once if it was done before the call; a
// deadline gives os.ErrDeadlineExceeded, as Read.
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
// connection is closed. A done context gives a *net.OpError (Op "write")
// wrapping ctx.Err().
func (c *conn) WaitWrite(ctx context.Context) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.pfd.WaitWritable(orBackground(ctx)); err != nil {
		return c.fd.ioError(ioWritePoll, err)
	}
	return nil
}
