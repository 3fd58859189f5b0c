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

	"github.com/gatenet/gatenet/internal/poll"
)

// TCPConn is a TCP connection with the method set of *net.TCPConn.
//
// In a testing/synctest bubble, a loopback connection both of whose ends
// gatenet made there parks its reads, writes and WaitRead durably (in
// fake time); a writer on a full send buffer does so while its peer has
// bytes to read. A connection to net's, another process's or one made
// outside the bubble, one whose number was handed out (File,
// SyscallConn) or one with faults attached waits as net's does.
type TCPConn struct {
	conn
}

// Keep-alive defaults, as net's (go.dev/issue/31510).
const (
	defaultKeepAliveIdle     = 15 * time.Second
	defaultKeepAliveInterval = 15 * time.Second
	defaultKeepAliveCount    = 9
)

// newTCPConn applies net's defaults: TCP_NODELAY on, and keep-alive
// enabled with keepAliveIdle (15 s when 0) unless it is negative or cfg
// says otherwise.
func newTCPConn(fd *netFD, keepAliveIdle time.Duration, cfg net.KeepAliveConfig) *TCPConn {
	fd.setsockoptInt(unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	if !cfg.Enable && keepAliveIdle >= 0 {
		cfg = net.KeepAliveConfig{Enable: true, Idle: keepAliveIdle}
	}
	c := &TCPConn{conn{fd}}
	if cfg.Enable {
		c.SetKeepAliveConfig(cfg)
	}
	return c
}

func (c *TCPConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.localAddr(), Addr: c.fd.raddr, Err: err}
}

// CloseRead shuts down the reading side (shutdown(2) SHUT_RD).
func (c *TCPConn) CloseRead() error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.shutdown(unix.SHUT_RD); err != nil {
		return c.opError("close", err)
	}
	return nil
}

// CloseWrite shuts down the writing side (shutdown(2) SHUT_WR): the peer
// reads io.EOF; reading here goes on.
func (c *TCPConn) CloseWrite() error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.shutdown(unix.SHUT_WR); err != nil {
		return c.opError("close", err)
	}
	return nil
}

// SetNoDelay sets TCP_NODELAY (on by default, as net).
func (c *TCPConn) SetNoDelay(noDelay bool) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.setsockoptInt(unix.IPPROTO_TCP, unix.TCP_NODELAY, boolint(noDelay)); err != nil {
		return c.opError("set", err)
	}
	return nil
}

// SetLinger sets SO_LINGER: sec < 0 lingers in the background (the
// default), 0 discards unsent data and resets the connection on Close,
// sec > 0 lingers up to sec seconds.
func (c *TCPConn) SetLinger(sec int) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.setLinger(sec); err != nil {
		return c.opError("set", err)
	}
	return nil
}

// SetKeepAlive sets SO_KEEPALIVE.
func (c *TCPConn) SetKeepAlive(keepalive bool) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.setsockoptInt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, boolint(keepalive)); err != nil {
		return c.opError("set", err)
	}
	return nil
}

// SetKeepAlivePeriod sets TCP_KEEPIDLE only, rounded up to seconds, as net.
func (c *TCPConn) SetKeepAlivePeriod(d time.Duration) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	if err := c.fd.setKeepAliveOpt(unix.TCP_KEEPIDLE, d, defaultKeepAliveIdle); err != nil {
		return c.opError("set", err)
	}
	return nil
}

// SetKeepAliveConfig applies a net.KeepAliveConfig: zero fields take net's
// defaults (15 s, 15 s, 9), negative ones are left unchanged.
func (c *TCPConn) SetKeepAliveConfig(config net.KeepAliveConfig) error {
	if !c.ok() {
		return syscall.EINVAL
	}
	fd := c.fd
	if err := fd.setsockoptInt(unix.SOL_SOCKET, unix.SO_KEEPALIVE, boolint(config.Enable)); err != nil {
		return c.opError("set", err)
	}
	if err := fd.setKeepAliveOpt(unix.TCP_KEEPIDLE, config.Idle, defaultKeepAliveIdle); err != nil {
		return c.opError("set", err)
	}
	if err := fd.setKeepAliveOpt(unix.TCP_KEEPINTVL, config.Interval, defaultKeepAliveInterval); err != nil {
		return c.opError("set", err)
	}
	count := config.Count
	if count == 0 {
		count = defaultKeepAliveCount
	}
	if count > 0 {
		if err := fd.setsockoptInt(unix.IPPROTO_TCP, unix.TCP_KEEPCNT, count); err != nil {
			return c.opError("set", err)
		}
	}
	return nil
}

// MultipathTCP reports whether the connection is using Multipath TCP, as
// net's: false for a plain TCP socket, and for an MPTCP one whose peer (or
// a middlebox) made it fall back to TCP, where the kernel can tell
// (Linux 5.16 and later; before, the socket's protocol is all it says).
// After Close it reports false; net's reports true there (it takes the
// failed getsockopt for "not fallen back").
func (c *TCPConn) MultipathTCP() (bool, error) {
	if !c.ok() {
		return false, syscall.EINVAL
	}
	using := false
	c.fd.pfd.Control(func(s int) error { using = usingMultipathTCP(s); return nil }) // not RawControl: the number stays gatenet's
	return using, nil
}

// ReadFrom copies r into the connection (io.ReaderFrom) without copying
// through user space where the kernel can, as net's: splice(2) when r is a
// gatenet stream conn or pipe, sendfile(2) when r is a regular file (also
// inside an *io.LimitedReader, whose N is updated); otherwise through a
// buffer. Errors other than io.EOF come as *net.OpError{Op: "readfrom"},
// except a sendfile that an *os.File's (or gatenet *File's) WriteTo
// started, which reports *fs.PathError{Op: "read"} as os does for net.
func (c *TCPConn) ReadFrom(r io.Reader) (int64, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	n, err, handled, srcErr, src := spliceFrom(&c.fd.pfd, r)
	if f, ok := src.(*File); ok {
		err = pipeToConnError(c.fd, f, err, srcErr)
	} else {
		err = wrapSyscallError("splice", err)
	}
	if !handled {
		n, err, handled = c.fd.sendFile(r)
		if handled {
			if ferr, ok := fileWriteToError(r, err); ok {
				return n, ferr
			}
		}
	}
	if !handled {
		var m int64
		m, err = io.Copy(writerOnly{c}, r)
		n += m
	}
	if err != nil && err != io.EOF {
		err = c.opError("readfrom", err)
	}
	return n, err
}

// WriteTo copies the connection into w until EOF (io.WriterTo), as net's:
// with splice(2) straight into a gatenet Unix stream conn (net's spliceTo);
// otherwise it hands itself, WriteTo hidden, to io.Copy (net's
// genericWriteTo), so a gatenet TCP conn or pipe w splices in its
// ReadFrom — and an error comes wrapped twice, w's ReadFrom's inside this
// conn's "writeto", exactly as net reports io.Copy between two TCP conns.
// An *os.File w, whose ReadFrom splices from net's conns only, gets what
// it gives those: a splice into a regular file or a pipe, its error the
// file's "write" *fs.PathError (spliceToOSFile).
func (c *TCPConn) WriteTo(w io.Writer) (int64, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	var n int64
	var err error
	handled := false
	switch w := w.(type) {
	case *UnixConn:
		if dst := spliceEnd(w); dst != nil {
			n, err, handled = poll.Splice(dst, &c.fd.pfd, 0)
			err = wrapSyscallError("splice", err)
		}
	case *os.File:
		n, err, handled = spliceToOSFile(w, &c.fd.pfd)
	default:
		if rc, network := netOwnConn(w); rc != nil {
			// One of net's conns, whose ReadFrom splices from net's conns
			// only: splice into it here, failing as its ReadFrom would.
			// (A user's type embedding one has its own ReadFrom run.)
			var cerr error
			n, err, handled, cerr = spliceToRaw(rc, &c.fd.pfd)
			if err == nil {
				err = unwrapRawError(cerr)
			}
			err = wrapSyscallError("splice", err)
			if dst, ok := w.(net.Conn); ok && err != nil && network != "unix" { // net's TCPConn.ReadFrom's
				err = &net.OpError{Op: "readfrom", Net: network, Source: dst.LocalAddr(), Addr: dst.RemoteAddr(), Err: err}
			}
			break
		}
		if f := osFileWithoutReadFrom(w); f != nil {
			// (*os.File).ReadFrom(c), which cannot splice from c, hands
			// io.Copy the file so wrapped: splice into it here, and fail as
			// os's ReadFrom does from net's conns, with the file's error.
			if n, err, handled := spliceToOSFile(f, &c.fd.pfd); handled {
				return n, err
			}
		}
	}
	if !handled {
		n, err = io.Copy(w, tcpConnWithoutWriteTo{TCPConn: c})
	}
	if err != nil && err != io.EOF {
		err = c.opError("writeto", err)
	}
	return n, err
}

// writerOnly hides ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

func (fd *netFD) setLinger(sec int) error {
	var l unix.Linger
	if sec >= 0 {
		l.Onoff, l.Linger = 1, int32(sec)
	}
	if err := fd.pfd.Incref(); err != nil {
		return err
	}
	defer fd.pfd.Decref()
	return os.NewSyscallError("setsockopt", unix.SetsockoptLinger(fd.pfd.Sysfd, unix.SOL_SOCKET, unix.SO_LINGER, &l))
}

// setKeepAliveOpt sets a TCP keep-alive time in whole seconds, rounded up:
// 0 means def, negative leaves the option alone.
func (fd *netFD) setKeepAliveOpt(opt int, d, def time.Duration) error {
	if d == 0 {
		d = def
	} else if d < 0 {
		return nil
	}
	secs := int((d + time.Second - 1) / time.Second)
	return fd.setsockoptInt(unix.IPPROTO_TCP, opt, secs)
}

// TCPListener is a TCP listener with the method set of *net.TCPListener.
type TCPListener struct {
	listener
	lc ListenConfig // the accepted connections' keep-alive settings
}

// ln is l's shared part, nil for a nil l (listener's methods then report
// EINVAL, as net's).
func (l *TCPListener) ln() *listener {
	if l == nil {
		return nil
	}
	return &l.listener
}

// Accept waits for and returns the next connection (accept4(2)).
func (l *TCPListener) Accept() (net.Conn, error) {
	c, err := l.AcceptTCP()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AcceptTCP is Accept returning a *TCPConn.
func (l *TCPListener) AcceptTCP() (*TCPConn, error) {
	return l.acceptTCP(context.Background())
}

// AcceptContext is Accept, also returning when ctx is done, with a
// *net.OpError (Op "accept") wrapping ctx.Err() (not
// os.ErrDeadlineExceeded, which stays the deadline's error); the listener
// stays usable.
func (l *TCPListener) AcceptContext(ctx context.Context) (net.Conn, error) {
	c, err := l.acceptTCP(orBackground(ctx))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (l *TCPListener) acceptTCP(ctx context.Context) (*TCPConn, error) {
	fd, err := l.ln().accept(ctx)
	if err != nil {
		return nil, err
	}
	return newTCPConn(fd, l.lc.KeepAlive, l.lc.KeepAliveConfig), nil
}

// Close stops listening; a blocked Accept returns net.ErrClosed.
func (l *TCPListener) Close() error { return l.ln().close() }

// Addr returns the listener's address.
func (l *TCPListener) Addr() net.Addr { return l.fd.localAddr() }

// SetDeadline sets the deadline for Accept. As net's, its errors are not
// wrapped.
func (l *TCPListener) SetDeadline(t time.Time) error { return l.ln().setDeadline(t) }

// SyscallConn returns a raw connection whose Read and Write are EINVAL.
func (l *TCPListener) SyscallConn() (syscall.RawConn, error) { return l.ln().syscallConn() }

// File returns a duplicate of the listening socket as an *os.File
// (fcntl(2) F_DUPFD_CLOEXEC). As conn's File, and unlike net's, its Fd
// leaves the descriptor non-blocking: a child given it (ExtraFiles) that
// accepts with blocking accept(2) must clear O_NONBLOCK itself, as a Go
// child's FileListener never needs to.
func (l *TCPListener) File() (*os.File, error) { return l.ln().file() }

// WaitRead parks until a connection is pending (Accept would not block),
// ctx is done, the deadline passes or the listener is closed.
// A done context gives a *net.OpError (Op "accept") wrapping ctx.Err(),
// at once if it was done before the call; the deadline gives
// os.ErrDeadlineExceeded. It consumes nothing.
func (l *TCPListener) WaitRead(ctx context.Context) error { return l.ln().waitRead(ctx) }
