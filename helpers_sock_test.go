//go:build linux

package gatenet_test

// Helpers the socket tests share: the two "stacks" (net and gatenet) a
// parity scenario runs on, the side-by-side runner, connected pairs, an
// observation of an error in a comparable form, and getsockopt helpers.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// sockListenOpts is the part of a ListenConfig both stacks share.
type sockListenOpts struct {
	Control   func(network, address string, c syscall.RawConn) error
	KeepAlive time.Duration
	MPTCP     *bool // SetMultipathTCP, if set
}

// sockDialOpts is the part of a Dialer both stacks share.
type sockDialOpts struct {
	Timeout       time.Duration
	Deadline      time.Time
	LocalAddr     net.Addr
	FallbackDelay time.Duration
	KeepAlive     time.Duration
	Control       func(network, address string, c syscall.RawConn) error
	MPTCP         *bool // SetMultipathTCP, if set
}

// sockStack is one socket implementation. Every constructor returns an
// untyped nil on error, whatever the implementation's concrete types.
type sockStack struct {
	Name         string
	Listen       func(network, address string) (net.Listener, error)
	Dial         func(network, address string) (net.Conn, error)
	ListenWith   func(o sockListenOpts, network, address string) (net.Listener, error)
	DialWith     func(ctx context.Context, o sockDialOpts, network, address string) (net.Conn, error)
	DialTCP      func(network string, laddr, raddr *net.TCPAddr) (net.Conn, error)
	ListenTCP    func(network string, laddr *net.TCPAddr) (net.Listener, error)
	FileConn     func(f *os.File) (net.Conn, error)
	FileListener func(f *os.File) (net.Listener, error)
	// The Dialer's typed dials (Go 1.26), with o's options.
	DialerTCP  func(ctx context.Context, o sockDialOpts, network string, laddr, raddr netip.AddrPort) (net.Conn, error)
	DialerUDP  func(ctx context.Context, o sockDialOpts, network string, laddr, raddr netip.AddrPort) (net.Conn, error)
	DialerUnix func(ctx context.Context, o sockDialOpts, network string, laddr, raddr *net.UnixAddr) (net.Conn, error)
}

func (s sockStack) isNet() bool { return s.Name == "net" }

func sockConnOrNil[C net.Conn](c C, err error) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

func sockListenerOrNil[L net.Listener](l L, err error) (net.Listener, error) {
	if err != nil {
		return nil, err
	}
	return l, nil
}

var sockNetStack = sockStack{
	Name:   "net",
	Listen: net.Listen,
	Dial:   net.Dial,
	ListenWith: func(o sockListenOpts, network, address string) (net.Listener, error) {
		lc := net.ListenConfig{Control: o.Control, KeepAlive: o.KeepAlive}
		if o.MPTCP != nil {
			lc.SetMultipathTCP(*o.MPTCP)
		}
		return lc.Listen(context.Background(), network, address)
	},
	DialWith: func(ctx context.Context, o sockDialOpts, network, address string) (net.Conn, error) {
		return sockNetDialer(o).DialContext(ctx, network, address)
	},
	DialerTCP: func(ctx context.Context, o sockDialOpts, network string, laddr, raddr netip.AddrPort) (net.Conn, error) {
		return sockConnOrNil(sockNetDialer(o).DialTCP(ctx, network, laddr, raddr))
	},
	DialerUDP: func(ctx context.Context, o sockDialOpts, network string, laddr, raddr netip.AddrPort) (net.Conn, error) {
		return sockConnOrNil(sockNetDialer(o).DialUDP(ctx, network, laddr, raddr))
	},
	DialerUnix: func(ctx context.Context, o sockDialOpts, network string, laddr, raddr *net.UnixAddr) (net.Conn, error) {
		return sockConnOrNil(sockNetDialer(o).DialUnix(ctx, network, laddr, raddr))
	},
	DialTCP: func(network string, laddr, raddr *net.TCPAddr) (net.Conn, error) {
		return sockConnOrNil(net.DialTCP(network, laddr, raddr))
	},
	ListenTCP: func(network string, laddr *net.TCPAddr) (net.Listener, error) {
		return sockListenerOrNil(net.ListenTCP(network, laddr))
	},
	FileConn:     net.FileConn,
	FileListener: net.FileListener,
}

var sockGatenetStack = sockStack{
	Name:   "gatenet",
	Listen: gatenet.Listen,
	Dial:   gatenet.Dial,
	ListenWith: func(o sockListenOpts, network, address string) (net.Listener, error) {
		lc := gatenet.ListenConfig{Control: o.Control, KeepAlive: o.KeepAlive}
		if o.MPTCP != nil {
			lc.SetMultipathTCP(*o.MPTCP)
		}
		return lc.Listen(context.Background(), network, address)
	},
	DialWith: func(ctx context.Context, o sockDialOpts, network, address string) (net.Conn, error) {
		return sockGatenetDialer(o).DialContext(ctx, network, address)
	},
	DialerTCP: func(ctx context.Context, o sockDialOpts, network string, laddr, raddr netip.AddrPort) (net.Conn, error) {
		return sockConnOrNil(sockGatenetDialer(o).DialTCP(ctx, network, laddr, raddr))
	},
	DialerUDP: func(ctx context.Context, o sockDialOpts, network string, laddr, raddr netip.AddrPort) (net.Conn, error) {
		return sockConnOrNil(sockGatenetDialer(o).DialUDP(ctx, network, laddr, raddr))
	},
	DialerUnix: func(ctx context.Context, o sockDialOpts, network string, laddr, raddr *net.UnixAddr) (net.Conn, error) {
		return sockConnOrNil(sockGatenetDialer(o).DialUnix(ctx, network, laddr, raddr))
	},
	DialTCP: func(network string, laddr, raddr *net.TCPAddr) (net.Conn, error) {
		return sockConnOrNil(gatenet.DialTCP(network, laddr, raddr))
	},
	ListenTCP: func(network string, laddr *net.TCPAddr) (net.Listener, error) {
		return sockListenerOrNil(gatenet.ListenTCP(network, laddr))
	},
	FileConn:     gatenet.FileConn,
	FileListener: gatenet.FileListener,
}

func sockNetDialer(o sockDialOpts) *net.Dialer {
	d := &net.Dialer{Timeout: o.Timeout, Deadline: o.Deadline, LocalAddr: o.LocalAddr,
		FallbackDelay: o.FallbackDelay, KeepAlive: o.KeepAlive, Control: o.Control}
	if o.MPTCP != nil {
		d.SetMultipathTCP(*o.MPTCP)
	}
	return d
}

func sockGatenetDialer(o sockDialOpts) *gatenet.Dialer {
	d := &gatenet.Dialer{Timeout: o.Timeout, Deadline: o.Deadline, LocalAddr: o.LocalAddr,
		FallbackDelay: o.FallbackDelay, KeepAlive: o.KeepAlive, Control: o.Control}
	if o.MPTCP != nil {
		d.SetMultipathTCP(*o.MPTCP)
	}
	return d
}

// The method sets the tests use beyond net.Conn and net.Listener; both
// stacks' concrete types have them.
type (
	sockConn interface {
		net.Conn
		CloseRead() error
		CloseWrite() error
		File() (*os.File, error)
		SyscallConn() (syscall.RawConn, error)
		SetReadBuffer(int) error
		SetWriteBuffer(int) error
	}
	sockTCPConn interface {
		sockConn
		SetLinger(sec int) error
		SetKeepAlive(bool) error
		SetKeepAlivePeriod(time.Duration) error
		SetNoDelay(bool) error
	}
	sockListener interface {
		net.Listener
		SetDeadline(time.Time) error
		SyscallConn() (syscall.RawConn, error)
		File() (*os.File, error)
	}
)

var (
	_ sockTCPConn  = (*net.TCPConn)(nil)
	_ sockTCPConn  = (*gatenet.TCPConn)(nil)
	_ sockConn     = (*net.UnixConn)(nil)
	_ sockConn     = (*gatenet.UnixConn)(nil)
	_ sockListener = (*net.TCPListener)(nil)
	_ sockListener = (*gatenet.TCPListener)(nil)
	_ sockListener = (*net.UnixListener)(nil)
	_ sockListener = (*gatenet.UnixListener)(nil)
)

// sockParity runs scenario on net and then on gatenet, each in a subtest
// with leak checks. expect states what the observation must be and is
// applied to both, so the expectation is itself checked against net; then
// gatenet's observation must equal net's field by field.
func sockParity[T any](t *testing.T, scenario func(t *testing.T, s sockStack) T, expect func(t *testing.T, s sockStack, obs T)) {
	t.Helper()
	var netObs T
	netOK := t.Run("net", func(t *testing.T) {
		testutil.CheckLeaks(t)
		netObs = scenario(t, sockNetStack)
		t.Logf("net observed: %+v", netObs)
		if expect != nil {
			expect(t, sockNetStack, netObs)
		}
	})
	t.Run("gatenet", func(t *testing.T) {
		testutil.CheckLeaks(t)
		obs := scenario(t, sockGatenetStack)
		if expect != nil {
			expect(t, sockGatenetStack, obs)
		}
		if netOK {
			require.Equal(t, netObs, obs, "gatenet differs from net")
		}
	})
}

// sockParityStreams is sockParity once per stream network, "tcp" and
// "unix", each in a subtest of its name, under a watchdog and leak checks;
// the scenario and the expectations are told the network.
func sockParityStreams[T any](t *testing.T, scenario func(t *testing.T, s sockStack, network string) T, expect func(t *testing.T, s sockStack, network string, obs T)) {
	t.Helper()
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			var check func(t *testing.T, s sockStack, obs T)
			if expect != nil {
				check = func(t *testing.T, s sockStack, obs T) { expect(t, s, network, obs) }
			}
			sockParity(t, func(t *testing.T, s sockStack) T { return scenario(t, s, network) }, check)
		})
	}
}

// sockAddress is a loopback address to listen on for network: a fresh
// path in t.TempDir() for Unix networks.
func sockAddress(t testing.TB, network string) string {
	switch network {
	case "tcp", "tcp4":
		return "127.0.0.1:0"
	case "tcp6":
		return "[::1]:0"
	case "unix", "unixpacket":
		return t.TempDir() + "/s"
	}
	t.Fatalf("no address for %q", network)
	return ""
}

// sockAddressOr is address, or sockAddress's for network when it is empty.
func sockAddressOr(t testing.TB, network, address string) string {
	if address == "" {
		return sockAddress(t, network)
	}
	return address
}

// sockPair is a connected pair on s: the dialed conn and the accepted one.
// Both and the listener are closed when t ends.
func sockPair(t testing.TB, s sockStack, network string) (client, server net.Conn, ln net.Listener) {
	t.Helper()
	ln, err := s.Listen(network, sockAddress(t, network))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	client, server = sockConnect(t, s, ln, sockDialOpts{})
	return client, server, ln
}

// sockConnect dials ln with o and accepts; both conns are closed when t ends.
func sockConnect(t testing.TB, s sockStack, ln net.Listener, o sockDialOpts) (client, server net.Conn) {
	t.Helper()
	return sockConnectTo(t, s, ln, o, ln.Addr().String())
}

// sockConnectTo is sockConnect dialling address (ln's port under another
// name, say) instead of ln's own address.
func sockConnectTo(t testing.TB, s sockStack, ln net.Listener, o sockDialOpts, address string) (client, server net.Conn) {
	t.Helper()
	client, server, err := testutil.Connect(ln, func() (net.Conn, error) {
		return s.DialWith(context.Background(), o, ln.Addr().Network(), address)
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server
}

// sockNames turns addresses into symbols (and any other loopback port into
// "<port>") so that observations made on different sockets compare.
type sockNames struct{ pairs [][2]string }

func (n *sockNames) add(a net.Addr, sym string) {
	if a == nil || len(a.String()) < 3 { // leave "@" alone
		return
	}
	n.pairs = append(n.pairs, [2]string{a.String(), sym})
	sort.SliceStable(n.pairs, func(i, j int) bool { return len(n.pairs[i][0]) > len(n.pairs[j][0]) })
}

var sockPortRE = regexp.MustCompile(`(127\.0\.0\.1|0\.0\.0\.0|\[[0-9a-f:.]*\]|\]):\d+`)

func (n *sockNames) str(s string) string {
	if n != nil {
		for _, p := range n.pairs {
			s = strings.ReplaceAll(s, p[0], p[1])
		}
	}
	return sockPortRE.ReplaceAllString(s, "$1:<port>")
}

func (n *sockNames) addr(a net.Addr) string {
	if a == nil {
		return "<nil>"
	}
	return sockTypeName(a) + " " + n.str(a.String())
}

// sockErrObs is everything a caller can observe about an error, in a form
// that compares across sockets.
type sockErrObs struct {
	Nil        bool
	Text       string
	Type       string
	Op, Net    string // *net.OpError's fields
	Source     string // "%T symbol"
	Addr       string
	Inner      string // "%T: %v" of OpError.Err (unexported types masked)
	Syscall    string // the *os.SyscallError's call
	Errno      string // the syscall.Errno inside, if any
	Closed     bool   // errors.Is(err, net.ErrClosed)
	Deadline   bool   // errors.Is(err, os.ErrDeadlineExceeded)
	CtxCancel  bool   // errors.Is(err, context.Canceled)
	CtxDead    bool   // errors.Is(err, context.DeadlineExceeded)
	EOF        bool   // err == io.EOF (identity)
	EOFIs      bool   // errors.Is(err, io.EOF)
	NetError   bool   // a direct err.(net.Error) assertion succeeds
	Timeout    bool
	Temporary  bool
	ClosedBare bool // err == net.ErrClosed (identity)
	EINVALBare bool // err == syscall.EINVAL (identity)
}

// sockTypeName is %T, except that an unexported type (net's and gatenet's
// private error types, which callers cannot name) is masked.
func sockTypeName(v any) string {
	s := fmt.Sprintf("%T", v)
	name := strings.TrimLeft(s[strings.LastIndexByte(s, '.')+1:], "*")
	if name != "" && name[0] >= 'a' && name[0] <= 'z' && strings.Contains(s, ".") {
		return "<unexported>"
	}
	return s
}

func sockObserve(err error, n *sockNames) sockErrObs {
	if err == nil {
		return sockErrObs{Nil: true}
	}
	o := sockErrObs{
		Text:       n.str(err.Error()),
		Type:       sockTypeName(err),
		Closed:     errors.Is(err, net.ErrClosed),
		Deadline:   errors.Is(err, os.ErrDeadlineExceeded),
		CtxCancel:  errors.Is(err, context.Canceled),
		CtxDead:    errors.Is(err, context.DeadlineExceeded),
		EOF:        err == io.EOF,
		EOFIs:      errors.Is(err, io.EOF),
		ClosedBare: err == net.ErrClosed,
		EINVALBare: err == syscall.EINVAL,
	}
	if ne, ok := err.(net.Error); ok {
		//lint:ignore SA1019 net/http and crypto/tls still call Temporary: the parity tests compare it with net's
		o.NetError, o.Timeout, o.Temporary = true, ne.Timeout(), ne.Temporary()
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		o.Op, o.Net = oe.Op, oe.Net
		o.Source, o.Addr = n.addr(oe.Source), n.addr(oe.Addr)
		if oe.Err != nil {
			o.Inner = sockTypeName(oe.Err) + ": " + n.str(oe.Err.Error())
		}
	}
	var se *os.SyscallError
	if errors.As(err, &se) {
		o.Syscall = se.Syscall
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		o.Errno = unix.ErrnoName(errno)
	}
	return o
}

// sockRawFD runs f with the socket's descriptor (SyscallConn().Control,
// which leaves O_NONBLOCK alone, unlike File().Fd()).
func sockRawFD(t testing.TB, c any, f func(fd int)) {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	require.True(t, ok, "%T is not a syscall.Conn", c)
	rc, err := sc.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(u uintptr) { f(int(u)) }))
}

// sockOpt is getsockopt(level, opt) as an int.
func sockOpt(t testing.TB, c any, level, opt int) int {
	t.Helper()
	var v int
	var err error
	sockRawFD(t, c, func(fd int) { v, err = unix.GetsockoptInt(fd, level, opt) })
	require.NoError(t, err)
	return v
}

// sockFlags reports O_NONBLOCK and FD_CLOEXEC.
func sockFlags(t testing.TB, c any) (nonblock, cloexec bool) {
	t.Helper()
	sockRawFD(t, c, func(fd int) {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
		require.NoError(t, err)
		fd2, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		require.NoError(t, err)
		nonblock, cloexec = fl&unix.O_NONBLOCK != 0, fd2&unix.FD_CLOEXEC != 0
	})
	return nonblock, cloexec
}

// sockTCPState is the TCP state of c's socket (TCP_INFO), e.g. TCP_CLOSE.
func sockTCPState(t testing.TB, c any) uint8 {
	t.Helper()
	var st uint8
	sockRawFD(t, c, func(fd int) {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		require.NoError(t, err)
		st = info.State
	})
	return st
}

// sockWaitTCPState waits (up to a minute, polling) for c to reach state.
func sockWaitTCPState(t testing.TB, c any, state uint8) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); sockTCPState(t, c) != state; {
		require.True(t, time.Now().Before(deadline), "TCP state never reached %d", state)
		time.Sleep(time.Millisecond)
	}
}
