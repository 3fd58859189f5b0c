//go:build linux

package gatenet

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// UnixConn is a Unix domain socket connection with the method set of
// *net.UnixConn (stream, seqpacket and datagram).
type UnixConn struct {
	conn
}

func newUnixConn(fd *netFD) *UnixConn { return &UnixConn{conn{fd}} }

// CloseRead shuts down the reading side (shutdown(2) SHUT_RD).
func (c *UnixConn) CloseRead() error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.shutdown(unix.SHUT_RD); err != nil {
		return &net.OpError{Op: "close", Net: c.fd.net, Source: c.fd.localAddr(), Addr: c.fd.raddr, Err: err}
	}
	return nil
}

// CloseWrite shuts down the writing side (shutdown(2) SHUT_WR).
func (c *UnixConn) CloseWrite() error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.shutdown(unix.SHUT_WR); err != nil {
		return &net.OpError{Op: "close", Net: c.fd.net, Source: c.fd.localAddr(), Addr: c.fd.raddr, Err: err}
	}
	return nil
}

func (c *UnixConn) opError(op string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.localAddr(), Addr: addr, Err: err}
}

// unixAddrOf turns a sender address into a *net.UnixAddr; an unnamed
// sender is nil, as net reports it.
func (c *UnixConn) unixAddrOf(sa unix.Sockaddr) *net.UnixAddr {
	if sa, ok := sa.(*unix.SockaddrUnix); ok && sa.Name != "" {
		return &net.UnixAddr{Name: sa.Name, Net: sotypeToUnixNet(int(c.fd.sotype))}
	}
	return nil
}

func sotypeToUnixNet(sotype int) string {
	switch sotype {
	case unix.SOCK_DGRAM:
		return "unixgram"
	case unix.SOCK_SEQPACKET:
		return "unixpacket"
	}
	return "unix"
}

// ReadFromUnix reads a message and its sender (recvfrom(2)). End of stream
// comes as the running Go's net returns it: an *net.OpError wrapping io.EOF
// before Go 1.27, io.EOF itself (as from Read) from Go 1.27 on.
func (c *UnixConn) ReadFromUnix(b []byte) (int, *net.UnixAddr, error) {
	if !c.ok() {
		return 0, nil, syscall.EINVAL
	}
	n, sa, err := c.fd.pfd.ReadFrom(b)
	if err != nil && (unixReadFromWrapsEOF || err != io.EOF) {
		err = c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
	}
	return n, c.unixAddrOf(sa), err
}

// ReadFrom implements net.PacketConn: ReadFromUnix (recvfrom(2)) with the
// sender as a net.Addr (an untyped nil for an unnamed one), as net's.
func (c *UnixConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromUnix(b)
	if addr == nil {
		return n, nil, err
	}
	return n, addr, err
}

// ReadMsgUnix reads a message with its ancillary data (recvmsg(2) with
// MSG_CMSG_CLOEXEC, so received descriptors are close-on-exec), as net's;
// end of stream comes as from ReadFromUnix.
// Like net's it leaves the control data to the caller: ParseUnixControl
// parses it and closes the received descriptors when they cannot all be
// handed over (MSG_CTRUNC, a malformed message).
func (c *UnixConn) ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error) {
	if !c.ok() {
		return 0, 0, 0, nil, syscall.EINVAL
	}
	var sa unix.Sockaddr
	n, oobn, flags, sa, err = c.fd.pfd.ReadMsg(b, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil && (unixReadFromWrapsEOF || err != io.EOF) {
		err = c.opError("read", c.fd.raddr, wrapSyscallError("recvmsg", err))
	}
	return n, oobn, flags, c.unixAddrOf(sa), err
}

// WriteToUnix sends b to addr (sendto(2)); on a connected socket it fails
// with net.ErrWriteToConnected, as net's.
func (c *UnixConn) WriteToUnix(b []byte, addr *net.UnixAddr) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	var err error
	var n int
	switch {
	case c.fd.isConnected:
		err = net.ErrWriteToConnected
	case addr == nil:
		err = errMissingAddress
	case addr.Net != sotypeToUnixNet(int(c.fd.sotype)):
		err = syscall.EAFNOSUPPORT
	default:
		var to []*netFD
		if c.fd.bubbleDgram {
			to = c.fd.bubbleSending(datagramKey(addr))
		}
		n, err = c.fd.pfd.WriteTo(b, &unix.SockaddrUnix{Name: addr.Name})
		c.fd.bubbleSent(to, err)
		err = wrapSyscallError("sendto", err)
	}
	if err != nil {
		return n, c.opError("write", opAddr(addr), err)
	}
	return n, nil
}

// WriteTo implements net.PacketConn: WriteToUnix (sendto(2)) for a
// *net.UnixAddr, EINVAL in a *net.OpError for any other address, as net's.
func (c *UnixConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	a, ok := addr.(*net.UnixAddr)
	if !ok {
		return 0, c.opError("write", addr, syscall.EINVAL)
	}
	return c.WriteToUnix(b, a)
}

// WriteMsgUnix sends b with ancillary data oob to addr (sendmsg(2)); on a
// connected datagram socket it fails with net.ErrWriteToConnected, as
// net's. An empty b with oob sends one dummy byte on stream sockets, as
// net does, and reports n == 0.
func (c *UnixConn) WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error) {
	if !c.ok() {
		return 0, 0, syscall.EINVAL
	}
	var sa unix.Sockaddr
	switch {
	case c.fd.sotype == unix.SOCK_DGRAM && c.fd.isConnected:
		err = net.ErrWriteToConnected
	case addr != nil && addr.Net != sotypeToUnixNet(int(c.fd.sotype)):
		err = syscall.EAFNOSUPPORT
	default:
		if addr != nil {
			sa = &unix.SockaddrUnix{Name: addr.Name}
		}
		var to []*netFD
		if c.fd.bubbleDgram {
			to = c.fd.bubbleSending(datagramKey(addr)) // "" for none: the connected peer
		}
		n, oobn, err = c.fd.pfd.WriteMsg(b, oob, sa)
		c.fd.bubbleSent(to, err)
		err = wrapSyscallError("sendmsg", err)
	}
	if err != nil {
		return n, oobn, c.opError("write", opAddr(addr), err)
	}
	return n, oobn, nil
}

// UnixListener is a Unix domain socket listener with the method set of
// *net.UnixListener.
type UnixListener struct {
	listener
	path       string // the socket file Close removes, if unlink
	unlink     bool
	unlinkOnce sync.Once
}

// ln is l's shared part, nil for a nil l (listener's methods then report
// EINVAL, as net's).
func (l *UnixListener) ln() *listener {
	if l == nil {
		return nil
	}
	return &l.listener
}

// Accept waits for and returns the next connection (accept4(2)), as
// net's; a blocked Accept returns net.ErrClosed on Close.
func (l *UnixListener) Accept() (net.Conn, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptUnix is Accept (accept4(2)) returning a *UnixConn, as net's.
func (l *UnixListener) AcceptUnix() (*UnixConn, error) {
	return l.acceptUnix(context.Background())
}

// AcceptContext is Accept, also returning when ctx is done, with a
// *net.OpError (Op "accept") wrapping ctx.Err() (not
// os.ErrDeadlineExceeded, which stays the deadline's error); the listener
// stays usable.
func (l *UnixListener) AcceptContext(ctx context.Context) (net.Conn, error) {
	c, err := l.acceptUnix(orBackground(ctx))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (l *UnixListener) acceptUnix(ctx context.Context) (*UnixConn, error) {
	fd, err := l.ln().accept(ctx)
	if err != nil {
		return nil, err
	}
	return newUnixConn(fd), nil
}

// Close stops listening (close(2)) and, if the listener created its
// socket file, removes it first (unlink(2); abstract "@" names have
// none), as net's. A blocked Accept returns net.ErrClosed.
func (l *UnixListener) Close() error {
	if l.ln().ok() {
		// Remove, then close, as net does; only the first Close unlinks.
		l.unlinkOnce.Do(func() {
			if l.path != "" && l.path[0] != '@' && l.unlink {
				unix.Unlink(l.path)
			}
		})
	}
	return l.ln().close()
}

// Addr returns the listener's address, as net's (no syscall: recorded at
// Listen).
func (l *UnixListener) Addr() net.Addr { return l.fd.localAddr() }

// SetDeadline sets the deadline for Accept, on the poller (no syscall);
// errors are not wrapped, as net's.
func (l *UnixListener) SetDeadline(t time.Time) error { return l.ln().setDeadline(t) }

// SetUnlinkOnClose sets whether Close removes the socket file (unlink(2)),
// as net's. By default it does when Listen or ListenUnix created the
// file, and not for a listener from FileListener.
func (l *UnixListener) SetUnlinkOnClose(unlink bool) { l.unlink = unlink }

// SyscallConn returns a raw connection whose Read and Write are EINVAL,
// as net's; Control runs on the descriptor without a syscall of its own.
func (l *UnixListener) SyscallConn() (syscall.RawConn, error) { return l.ln().syscallConn() }

// File returns a duplicate of the listening socket as an *os.File
// (fcntl(2) F_DUPFD_CLOEXEC), as net's, except that its Fd leaves the
// descriptor non-blocking (TCPListener.File).
func (l *UnixListener) File() (*os.File, error) { return l.ln().file() }

// WaitRead parks until a connection is pending, ctx is done, the deadline
// passes or the listener is closed.
// A done context gives a *net.OpError (Op "accept") wrapping ctx.Err(),
// at once if it was done before the call; the deadline gives
// os.ErrDeadlineExceeded. It consumes nothing.
func (l *UnixListener) WaitRead(ctx context.Context) error { return l.ln().waitRead(ctx) }

// unixSotype is a Unix network's socket type, as net's: "unixgram" a
// datagram socket, "unixpacket" a seqpacket one, "unix" a stream.
func unixSotype(network string) int {
	switch network {
	case "unixpacket":
		return sockSeqpacket
	case "unixgram":
		return sockDgram
	}
	return sockStream
}
