//go:build linux

package gatenet

import (
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
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
		return &net.OpError{Op: "close", Net: c.fd.net, Source: c.fd.laddr, Addr: c.fd.raddr, Err: err}
	}
	return nil
}

// CloseWrite shuts down the writing side (shutdown(2) SHUT_WR).
func (c *UnixConn) CloseWrite() error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.shutdown(unix.SHUT_WR); err != nil {
		return &net.OpError{Op: "close", Net: c.fd.net, Source: c.fd.laddr, Addr: c.fd.raddr, Err: err}
	}
	return nil
}

// UnixListener is a Unix domain socket listener with the method set of
// *net.UnixListener.
type UnixListener struct {
	fd         *netFD
	path       string
	unlink     bool
	unlinkOnce sync.Once
}

func (l *UnixListener) ok() bool { return l != nil && l.fd != nil }

func (l *UnixListener) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: l.fd.net, Addr: l.fd.laddr, Err: err}
}

// Accept waits for and returns the next connection.
func (l *UnixListener) Accept() (net.Conn, error) {
	c, err := l.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptUnix is Accept returning a *UnixConn.
func (l *UnixListener) AcceptUnix() (*UnixConn, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	fd, err := l.fd.accept()
	if err != nil {
		return nil, l.opError("accept", err)
	}
	return newUnixConn(fd), nil
}

// Close stops listening and, if the listener created its socket file,
// removes it (abstract "@" names have none). A blocked Accept returns
// net.ErrClosed.
func (l *UnixListener) Close() error {
	if !l.ok() {
		return syscall.EINVAL
	}
	// Remove, then close, as net does; only the first Close unlinks.
	l.unlinkOnce.Do(func() {
		if l.path != "" && l.path[0] != '@' && l.unlink {
			unix.Unlink(l.path)
		}
	})
	if err := l.fd.Close(); err != nil {
		return l.opError("close", err)
	}
	return nil
}

// Addr returns the listener's address.
func (l *UnixListener) Addr() net.Addr { return l.fd.laddr }

// SetDeadline sets the deadline for Accept; errors are not wrapped, as net.
func (l *UnixListener) SetDeadline(t time.Time) error {
	if !l.ok() {
		return syscall.EINVAL
	}
	return l.fd.pfd.SetDeadline(t, pollfd.ModeRead)
}

// SetUnlinkOnClose sets whether Close removes the socket file. By default
// it does when Listen or ListenUnix created the file, and not for a
// listener from FileListener.
func (l *UnixListener) SetUnlinkOnClose(unlink bool) { l.unlink = unlink }

// SyscallConn returns a raw connection whose Read and Write are EINVAL.
func (l *UnixListener) SyscallConn() (syscall.RawConn, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	return &listenerRawConn{sockRawConn{l.fd}}, nil
}

// File returns a duplicate of the listening socket as an *os.File.
func (l *UnixListener) File() (*os.File, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	f, err := l.fd.dupFile()
	if err != nil {
		return nil, l.opError("file", err)
	}
	return f, nil
}
