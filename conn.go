//go:build linux

package gatenet

import (
	"context"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// conn is the part every socket conn shares, as net's conn: the
// net.Conn methods with net's error shapes.
type conn struct {
	fd *netFD
}

func (c *conn) ok() bool { return c != nil && c.fd != nil }

// ioOp names a conn operation and the system call behind it, for
// ioError.
type ioOp uint8

const (
	ioRead      ioOp = iota // read(2)
	ioWrite                 // write(2)
	ioClose                 // close(2)
	ioWritev                // writev(2)
	ioReadPoll              // WaitRead's wait for readability
	ioWritePoll             // WaitWrite's wait for room
)

var ioOpNames = [...]struct{ op, call string }{
	ioRead:      {"read", "read"},
	ioWrite:     {"write", "write"},
	ioClose:     {"close", "close"},
	ioWritev:    {"writev", "writev"},
	ioReadPoll:  {"read", "poll"},
	ioWritePoll: {"write", "poll"},
}

// ioError is the error a conn's I/O method returns for err:
// *net.OpError{Op: "read", …} with the conn's addresses and err wrapped in
// an *os.SyscallError naming the call, as net's. Out of line and with two
// arguments, so that the callers, on the path every blocked Read and
// WaitRead parks on, keep small frames: a parked goroutine's stack is most
// of what an idle connection costs.
//
//go:noinline
func (fd *netFD) ioError(op ioOp, err error) error {
	n := ioOpNames[op]
	return &net.OpError{Op: n.op, Net: fd.net, Source: fd.localAddr(), Addr: fd.raddr, Err: wrapSyscallError(n.call, err)}
}

// Read implements net.Conn (read(2)). At end of stream it returns a bare
// io.EOF; other errors are *net.OpError{Op: "read"}.
func (c *conn) Read(b []byte) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	n, err := c.fd.pfd.Read(b)
	if err != nil && err != io.EOF {
		err = c.fd.ioError(ioRead, err)
	}
	return n, err
}

// Write implements net.Conn (write(2), looping until all is written).
func (c *conn) Write(b []byte) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	if c.fd.bubbleDgram {
		return c.writeInBubble(context.Background(), b)
	}
	n, err := c.fd.pfd.Write(b)
	if err != nil {
		err = c.fd.ioError(ioWrite, err)
	}
	return n, err
}

// Close closes the connection; blocked Reads and Writes return
// net.ErrClosed.
func (c *conn) Close() error {
	if !c.ok() {
		return syscall.EINVAL
	}
	err := c.fd.Close()
	if err != nil {
		err = c.fd.ioError(ioClose, err)
	}
	return err
}

// LocalAddr returns the local address.
func (c *conn) LocalAddr() net.Addr {
	if !c.ok() {
		return nil
	}
	return c.fd.localAddr()
}

// RemoteAddr returns the remote address.
func (c *conn) RemoteAddr() net.Addr {
	if !c.ok() {
		return nil
	}
	return c.fd.raddr
}

// SetDeadline sets the read and write deadlines, with net's semantics.
func (c *conn) SetDeadline(t time.Time) error { return c.setDeadline(t, pollfd.ModeReadWrite) }

// SetReadDeadline sets the read deadline.
func (c *conn) SetReadDeadline(t time.Time) error { return c.setDeadline(t, pollfd.ModeRead) }

// SetWriteDeadline sets the write deadline.
func (c *conn) SetWriteDeadline(t time.Time) error { return c.setDeadline(t, pollfd.ModeWrite) }

func (c *conn) setDeadline(t time.Time, mode pollfd.Mode) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.pfd.SetDeadline(t, mode); err != nil {
		return &net.OpError{Op: "set", Net: c.fd.net, Addr: c.fd.localAddr(), Err: err}
	}
	return nil
}

// SetReadBuffer sets SO_RCVBUF.
func (c *conn) SetReadBuffer(bytes int) error {
	return c.setsockoptBuffer(unix.SO_RCVBUF, bytes)
}

// SetWriteBuffer sets SO_SNDBUF.
func (c *conn) SetWriteBuffer(bytes int) error {
	return c.setsockoptBuffer(unix.SO_SNDBUF, bytes)
}

func (c *conn) setsockoptBuffer(opt, bytes int) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.setsockoptInt(unix.SOL_SOCKET, opt, bytes); err != nil {
		return &net.OpError{Op: "set", Net: c.fd.net, Addr: c.fd.localAddr(), Err: err}
	}
	return nil
}

// SyscallConn returns a raw network connection (syscall.RawConn).
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	if !c.ok() {
		return nil, syscall.EINVAL
	}
	return newRawConn(c.fd), nil
}

// File returns a duplicate of the socket as an *os.File (fcntl
// F_DUPFD_CLOEXEC), named as net names it. Closing either does not affect
// the other. One difference from net: net marks its copy so that the
// copy's Fd clears O_NONBLOCK (on the open file description the two
// share); the copy here is an ordinary os.NewFile of a non-blocking
// descriptor, whose Fd leaves the mode alone, so c keeps working.
func (c *conn) File() (*os.File, error) {
	if !c.ok() {
		return nil, syscall.EINVAL
	}
	f, err := c.fd.dupFile()
	if err != nil {
		return nil, &net.OpError{Op: "file", Net: c.fd.net, Source: c.fd.localAddr(), Addr: c.fd.raddr, Err: err}
	}
	return f, nil
}

// setsockoptInt wraps setsockopt(2) under a reference.
func (fd *netFD) setsockoptInt(level, opt, value int) error {
	if err := fd.pfd.Incref(); err != nil {
		return err
	}
	defer fd.pfd.Decref()
	return os.NewSyscallError("setsockopt", unix.SetsockoptInt(fd.pfd.Sysfd, level, opt, value))
}

// dupFile duplicates the socket into an *os.File named as net names them
// ("tcp:127.0.0.1:1->127.0.0.1:2"; a listener's ends in "->").
func (fd *netFD) dupFile() (*os.File, error) {
	nfd, call, err := fd.pfd.Dup()
	if err != nil {
		if call != "" {
			err = os.NewSyscallError(call, err)
		}
		return nil, err
	}
	name := fd.net + ":" + addrString(fd.localAddr()) + "->" + addrString(fd.raddr)
	return os.NewFile(uintptr(nfd), name), nil
}

// addrString is a's string, or "" for none, as net's netFD.name.
func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// WriteBuffers writes every buffer in *v with writev(2), in batches of up
// to 1024 and looping on partial writes, and consumes *v as it goes (on
// error *v holds what was not written), as net.Buffers' WriteTo does on
// net's own conns. (net.Buffers.WriteTo reaches writev only for net's
// types; on any other conn it makes one Write per buffer: a datagram per
// buffer on a message socket, and room for other goroutines' writes
// between the buffers on a stream. So call this.)
func (c *conn) WriteBuffers(v *net.Buffers) (int64, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	var to []*netFD
	if c.fd.bubbleDgram { // the send reaches its peer in the bubble, as Write's
		to = c.fd.bubbleSending("")
	}
	n, err := c.fd.pfd.Writev((*[][]byte)(v))
	if c.fd.bubbleDgram {
		c.fd.bubbleSent(to, err)
	}
	if err != nil {
		err = c.fd.ioError(ioWritev, err)
	}
	return n, err
}

// Writev is WriteBuffers for a plain slice of buffers; bufs itself is
// left as it was.
func (c *conn) Writev(bufs [][]byte) (int64, error) {
	v := net.Buffers(bufs)
	return c.WriteBuffers(&v)
}
