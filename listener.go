//go:build linux

package gatenet

import (
	"context"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// Listen announces on the local network address, as net.Listen. Networks:
// "tcp", "tcp4", "tcp6", "unix", "unixpacket".
func Listen(network, address string) (net.Listener, error) {
	var lc ListenConfig
	return lc.Listen(context.Background(), network, address)
}

// Listen announces on the local network address, as (*net.ListenConfig).Listen.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	_, la, err := resolveListenAddr(ctx, network, address)
	if err != nil {
		return nil, err
	}
	var l net.Listener
	switch la := la.(type) {
	case *net.TCPAddr:
		l, err = lc.listenTCP(ctx, network, la)
	case *net.UnixAddr:
		l, err = lc.listenUnix(ctx, network, la)
	default: // udp: as net, which serves it from ListenPacket only
		return nil, &net.OpError{Op: "listen", Net: network, Addr: la, Err: &net.AddrError{Err: "unexpected address type", Addr: address}}
	}
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: la, Err: err}
	}
	return l, nil
}

// resolveListenAddr parses network and resolves address for a listener,
// choosing the first IPv4 address if there is one, as net does; errors
// come as net's *OpError{Op: "listen"}.
func resolveListenAddr(ctx context.Context, network, address string) (sockNetwork, net.Addr, error) {
	n, err := parseNetwork(network)
	if err != nil {
		return n, nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	addrs, err := resolveAddrList(ctx, nil, "listen", n, address, nil)
	if err != nil {
		return n, nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	return n, addrs.first(isIPv4), nil
}

// ListenTCP is net.ListenTCP: laddr nil or with a nil IP listens on all
// addresses; port 0 picks one.
func ListenTCP(network string, laddr *net.TCPAddr) (*TCPListener, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Addr: opAddr(laddr), Err: net.UnknownNetworkError(network)}
	}
	if laddr == nil {
		laddr = &net.TCPAddr{}
	}
	var lc ListenConfig
	l, err := lc.listenTCP(context.Background(), network, laddr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: err}
	}
	return l, nil
}

// ListenUnix is net.ListenUnix for "unix" and "unixpacket".
func ListenUnix(network string, laddr *net.UnixAddr) (*UnixListener, error) {
	switch network {
	case "unix", "unixpacket":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Addr: opAddr(laddr), Err: net.UnknownNetworkError(network)}
	}
	if laddr == nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: errMissingAddress}
	}
	var lc ListenConfig
	l, err := lc.listenUnix(context.Background(), network, laddr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: err}
	}
	return l, nil
}

// opAddr turns a typed nil address into a nil interface, as net's opAddr.
func opAddr[A interface {
	*net.TCPAddr | *net.UDPAddr | *net.UnixAddr | *net.IPAddr
	net.Addr
}](a A) net.Addr {
	if a == nil {
		return nil
	}
	return a
}

func (lc *ListenConfig) socketConfig() socketConfig {
	cfg := socketConfig{poller: lc.Poller, shard: poll.AnyShard, backlog: lc.Backlog, faults: lc.Faults}
	if lc.Control != nil || lc.ReusePort {
		cfg.control = func(_ context.Context, network, address string, c syscall.RawConn) error {
			if lc.ReusePort {
				var serr error
				if err := c.Control(func(s uintptr) {
					serr = unix.SetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
				}); err != nil {
					return err
				}
				if serr != nil {
					return wrapSyscallError("setsockopt", serr)
				}
			}
			if lc.Control != nil {
				return lc.Control(network, address, c)
			}
			return nil
		}
	}
	return cfg
}

func (lc *ListenConfig) listenTCP(ctx context.Context, network string, laddr *net.TCPAddr) (*TCPListener, error) {
	return lc.listenTCPShard(ctx, network, laddr, poll.AnyShard)
}

// listenTCPShard listens with Multipath TCP first if the ListenConfig says
// so and the kernel has it, and with plain TCP after any failure of that,
// as net's listenMPTCP. shard is the poller shard (poll.AnyShard spreads).
func (lc *ListenConfig) listenTCPShard(ctx context.Context, network string, laddr *net.TCPAddr, shard int) (*TCPListener, error) {
	if lc.MultipathTCP() && supportsMultipathTCP() {
		if l, err := lc.listenTCPProto(ctx, network, laddr, shard, unix.IPPROTO_MPTCP); err == nil {
			return l, nil
		}
	}
	return lc.listenTCPProto(ctx, network, laddr, shard, 0)
}

func (lc *ListenConfig) listenTCPProto(ctx context.Context, network string, laddr *net.TCPAddr, shard, proto int) (*TCPListener, error) {
	family, ipv6only := favoriteAddrFamily(network, laddr, nil, true)
	cfg := lc.socketConfig()
	cfg.shard = shard
	fd, err := socket(ctx, network, family, sockStream, proto, ipv6only, laddr, nil, cfg)
	if err != nil {
		return nil, err
	}
	fd.inheritShard = shard != poll.AnyShard
	return &TCPListener{listener: listener{fd}, lc: *lc}, nil
}

func (lc *ListenConfig) listenUnix(ctx context.Context, network string, laddr *net.UnixAddr) (*UnixListener, error) {
	// "unixgram", as net: a listener on a bound datagram socket, whose
	// Accept fails with EOPNOTSUPP.
	fd, err := socket(ctx, network, unix.AF_UNIX, unixSotype(network), 0, false, laddr, nil, lc.socketConfig())
	if err != nil {
		return nil, err
	}
	path := ""
	if a, ok := fd.localAddr().(*net.UnixAddr); ok {
		path = a.Name
	}
	return &UnixListener{listener: listener{fd}, path: path, unlink: true}, nil
}

// listener is what TCPListener and UnixListener share, as conn is what the
// conns share: the listening socket, and every method that passes it
// through (net's TCPListener and UnixListener repeat these; here they are
// written once). Its methods take a nil *listener, so that the exported
// ones, reached through ln(), report EINVAL for a nil or zero listener as
// net's do: a method promoted from an embedded field would panic on a nil
// *TCPListener instead.
type listener struct {
	fd *netFD
}

func (l *listener) ok() bool { return l != nil && l.fd != nil }

func (l *listener) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: l.fd.net, Addr: l.fd.localAddr(), Err: err}
}

// accept waits for the next connection (accept4(2)) or for ctx.
func (l *listener) accept(ctx context.Context) (*netFD, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	fd, err := l.fd.accept(ctx)
	if err != nil {
		return nil, l.opError("accept", err)
	}
	return fd, nil
}

// close closes the socket; a blocked Accept returns net.ErrClosed.
func (l *listener) close() error {
	if !l.ok() {
		return syscall.EINVAL
	}
	if err := l.fd.Close(); err != nil {
		return l.opError("close", err)
	}
	return nil
}

// setDeadline sets Accept's deadline, on the poller (no system call); as
// net's, its errors are not wrapped.
func (l *listener) setDeadline(t time.Time) error {
	if !l.ok() {
		return syscall.EINVAL
	}
	return l.fd.pfd.SetDeadline(t, pollfd.ModeRead)
}

// syscallConn is the listener's RawConn, whose Read and Write are EINVAL.
func (l *listener) syscallConn() (syscall.RawConn, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	return &listenerRawConn{sockRawConn{l.fd}}, nil
}

// file duplicates the socket (fcntl(2) F_DUPFD_CLOEXEC) as an *os.File.
func (l *listener) file() (*os.File, error) {
	if !l.ok() {
		return nil, syscall.EINVAL
	}
	f, err := l.fd.dupFile()
	if err != nil {
		return nil, l.opError("file", err)
	}
	return f, nil
}

// waitRead parks until a connection is pending, ctx is done, the
// deadline passes or the listener is closed. A done context gives a
// *net.OpError (Op "accept") wrapping ctx.Err().
func (l *listener) waitRead(ctx context.Context) error {
	if !l.ok() {
		return syscall.EINVAL
	}
	if err := l.fd.pfd.WaitReadable(orBackground(ctx)); err != nil {
		return l.opError("accept", wrapSyscallError("poll", err))
	}
	return nil
}

// descriptor is the socket's poll.FD (Pollable), nil for a nil or zero
// listener.
func (l *listener) descriptor() *poll.FD {
	if !l.ok() {
		return nil
	}
	return &l.fd.pfd
}
