//go:build linux

package gatenet_test

// Helpers the datagram tests (udp_*_test.go) share. They extend the
// socket stacks of helpers_sock_test.go (sockStack, sockParity,
// sockObserve, sockNames) with the datagram constructors and observe each
// read and write method in a form that compares across stacks.

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

// udpConn is the method set of *net.UDPConn the tests use.
type udpConn interface {
	net.Conn
	ReadFrom(b []byte) (int, net.Addr, error)
	WriteTo(b []byte, addr net.Addr) (int, error)
	ReadFromUDP(b []byte) (int, *net.UDPAddr, error)
	ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error)
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error)
	WriteToUDP(b []byte, addr *net.UDPAddr) (int, error)
	WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
	WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error)
	SyscallConn() (syscall.RawConn, error)
	File() (*os.File, error)
	SetReadBuffer(int) error
	SetWriteBuffer(int) error
}

// unixDgramConn is the method set of *net.UnixConn the datagram tests use.
type unixDgramConn interface {
	net.Conn
	ReadFrom(b []byte) (int, net.Addr, error)
	WriteTo(b []byte, addr net.Addr) (int, error)
	ReadFromUnix(b []byte) (int, *net.UnixAddr, error)
	ReadMsgUnix(b, oob []byte) (n, oobn, flags int, addr *net.UnixAddr, err error)
	WriteToUnix(b []byte, addr *net.UnixAddr) (int, error)
	WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (n, oobn int, err error)
	SyscallConn() (syscall.RawConn, error)
	File() (*os.File, error)
}

var (
	_ udpConn        = (*net.UDPConn)(nil)
	_ udpConn        = (*gatenet.UDPConn)(nil)
	_ net.PacketConn = (*gatenet.UDPConn)(nil)
	_ unixDgramConn  = (*net.UnixConn)(nil)
	_ unixDgramConn  = (*gatenet.UnixConn)(nil)
	_ net.PacketConn = (*gatenet.UnixConn)(nil)
)

// udpStack is a sockStack plus its datagram constructors. Every
// constructor returns an untyped nil on error.
type udpStack struct {
	sockStack
	ListenPacket     func(network, address string) (net.PacketConn, error)
	ListenPacketWith func(o sockListenOpts, network, address string) (net.PacketConn, error)
	ListenUDP        func(network string, laddr *net.UDPAddr) (udpConn, error)
	DialUDP          func(network string, laddr, raddr *net.UDPAddr) (udpConn, error)
	ListenUnixgram   func(network string, laddr *net.UnixAddr) (unixDgramConn, error)
	FilePacketConn   func(f *os.File) (net.PacketConn, error)
	// ZeroUDP and ZeroUnix are zero values (no socket); NilUDP a nil pointer.
	ZeroUDP, NilUDP func() udpConn
	ZeroUnix        func() unixDgramConn
}

func udpOrNil[C udpConn](c C, err error) (udpConn, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

func unixDgramOrNil[C unixDgramConn](c C, err error) (unixDgramConn, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

var udpNetStack = udpStack{
	sockStack:    sockNetStack,
	ListenPacket: net.ListenPacket,
	ListenPacketWith: func(o sockListenOpts, network, address string) (net.PacketConn, error) {
		lc := net.ListenConfig{Control: o.Control, KeepAlive: o.KeepAlive}
		return lc.ListenPacket(context.Background(), network, address)
	},
	ListenUDP: func(network string, laddr *net.UDPAddr) (udpConn, error) {
		return udpOrNil(net.ListenUDP(network, laddr))
	},
	DialUDP: func(network string, laddr, raddr *net.UDPAddr) (udpConn, error) {
		return udpOrNil(net.DialUDP(network, laddr, raddr))
	},
	ListenUnixgram: func(network string, laddr *net.UnixAddr) (unixDgramConn, error) {
		return unixDgramOrNil(net.ListenUnixgram(network, laddr))
	},
	FilePacketConn: net.FilePacketConn,
	ZeroUDP:        func() udpConn { return &net.UDPConn{} },
	NilUDP:         func() udpConn { return (*net.UDPConn)(nil) },
	ZeroUnix:       func() unixDgramConn { return &net.UnixConn{} },
}

var udpGatenetStack = udpStack{
	sockStack:    sockGatenetStack,
	ListenPacket: gatenet.ListenPacket,
	ListenPacketWith: func(o sockListenOpts, network, address string) (net.PacketConn, error) {
		lc := gatenet.ListenConfig{Control: o.Control, KeepAlive: o.KeepAlive}
		return lc.ListenPacket(context.Background(), network, address)
	},
	ListenUDP: func(network string, laddr *net.UDPAddr) (udpConn, error) {
		return udpOrNil(gatenet.ListenUDP(network, laddr))
	},
	DialUDP: func(network string, laddr, raddr *net.UDPAddr) (udpConn, error) {
		return udpOrNil(gatenet.DialUDP(network, laddr, raddr))
	},
	ListenUnixgram: func(network string, laddr *net.UnixAddr) (unixDgramConn, error) {
		return unixDgramOrNil(gatenet.ListenUnixgram(network, laddr))
	},
	FilePacketConn: gatenet.FilePacketConn,
	ZeroUDP:        func() udpConn { return &gatenet.UDPConn{} },
	NilUDP:         func() udpConn { return (*gatenet.UDPConn)(nil) },
	ZeroUnix:       func() unixDgramConn { return &gatenet.UnixConn{} },
}

// udpStackOf is s's datagram half.
func udpStackOf(s sockStack) udpStack {
	if s.isNet() {
		return udpNetStack
	}
	return udpGatenetStack
}

// udpLoopback is a loopback address to listen on (port 0) for network.
func udpLoopback(network string) string {
	if network == "udp6" {
		return "[::1]:0"
	}
	return "127.0.0.1:0"
}

// udpSkipUnlessNetwork skips t when the host has no IPv6 loopback and
// network needs it.
func udpSkipUnlessNetwork(t testing.TB, network string) {
	t.Helper()
	if network != "udp6" {
		return
	}
	c, err := net.ListenPacket("udp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback (%v): skipping %s", err, network)
	}
	c.Close()
}

// udpListen is s.ListenPacket for a UDP network, closed when t ends.
func udpListen(t testing.TB, s udpStack, network, address string) udpConn {
	t.Helper()
	pc, err := s.ListenPacket(network, address)
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	c, ok := pc.(udpConn)
	require.True(t, ok, "%T is not a UDP conn", pc)
	return c
}

// udpDial is s.Dial for a UDP network, closed when t ends.
func udpDial(t testing.TB, s udpStack, network, address string) udpConn {
	t.Helper()
	nc, err := s.Dial(network, address)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	c, ok := nc.(udpConn)
	require.True(t, ok, "%T is not a UDP conn", nc)
	return c
}

// listenUDP opens a gatenet UDP socket on 127.0.0.1 (in the caller's
// bubble, for a synctest); the caller closes it.
func listenUDP(t testing.TB) *gatenet.UDPConn {
	t.Helper()
	c, err := gatenet.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	return c
}

// udpLoopbackPair is a gatenet UDP socket r on 127.0.0.1 and one, w,
// connected to it (DialUDP), both closed when t ends.
func udpLoopbackPair(t testing.TB) (w, r *gatenet.UDPConn) {
	t.Helper()
	r = listenUDP(t)
	t.Cleanup(func() { r.Close() })
	w, err := gatenet.DialUDP("udp4", nil, r.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return w, r
}

// udpListenUnixgram is s.ListenPacket("unixgram", path), closed when t ends.
func udpListenUnixgram(t testing.TB, s udpStack, path string) unixDgramConn {
	t.Helper()
	pc, err := s.ListenPacket("unixgram", path)
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	c, ok := pc.(unixDgramConn)
	require.True(t, ok, "%T is not a Unix conn", pc)
	return c
}

// udpNames names conns' local addresses: udpNames(a, "<A>", b, "<B>").
func udpNames(pairs ...any) *sockNames {
	n := &sockNames{}
	for i := 0; i+1 < len(pairs); i += 2 {
		switch a := pairs[i].(type) {
		case net.Conn:
			n.add(a.LocalAddr(), pairs[i+1].(string))
		case net.Addr:
			n.add(a, pairs[i+1].(string))
		case string: // a path
			n.add(&net.UnixAddr{Name: a, Net: "unix"}, pairs[i+1].(string))
		default:
			panic(fmt.Sprintf("udpNames: %T", a))
		}
	}
	return n
}

// udpAutoRE matches an autobound abstract Unix name ("@" and 5 hex digits).
var udpAutoRE = regexp.MustCompile(`@[0-9a-f]{5}\b`)

// udpBarePortRE matches a port with no host (":54281"), as Control sees
// the address of a dial to an empty host.
var udpBarePortRE = regexp.MustCompile(`(^|\s):\d+\b`)

// udpStr is names.str plus autobound names and bare ports masked.
func udpStr(names *sockNames, s string) string {
	s = udpAutoRE.ReplaceAllString(names.str(s), "@<auto>")
	return udpBarePortRE.ReplaceAllString(s, "$1:<port>")
}

// udpAddr describes an address as returned: "<nil>" for an untyped nil,
// "*net.UDPAddr <nil>" for a typed one, else the type and symbolic
// string, and for a UDP address the length of its IP.
func udpAddr(names *sockNames, a net.Addr) string {
	s := udpStr(names, names.addr(a))
	if u, ok := a.(*net.UDPAddr); ok && u != nil {
		s += fmt.Sprintf(" iplen=%d zone=%q", len(u.IP), u.Zone)
	}
	return s
}

// udpAddrPort describes a netip.AddrPort as returned.
func udpAddrPort(names *sockNames, ap netip.AddrPort) string {
	return fmt.Sprintf("AddrPort %s valid=%v is4=%v is4in6=%v", names.str(ap.String()),
		ap.IsValid(), ap.Addr().Is4(), ap.Addr().Is4In6())
}

// udpReadObs is one datagram read's outcome.
type udpReadObs struct {
	Kind        string
	N           int
	Data        string
	Addr        string // the sender as returned ("" for Read)
	OOBN, Flags int
	Err         sockErrObs
}

// The read methods, by name. "Read" is net.Conn's.
var (
	udpReadKinds  = []string{"ReadFrom", "ReadFromUDP", "ReadFromUDPAddrPort", "ReadMsgUDP", "ReadMsgUDPAddrPort", "Read"}
	unixReadKinds = []string{"ReadFrom", "ReadFromUnix", "ReadMsgUnix", "Read"}
)

// udpRead reads one datagram from c into buf with the method kind.
func udpRead(c net.Conn, kind string, buf []byte, names *sockNames) udpReadObs {
	o := udpReadObs{Kind: kind}
	var err error
	switch kind {
	case "Read":
		o.N, err = c.Read(buf)
	case "ReadFrom":
		var a net.Addr
		o.N, a, err = c.(net.PacketConn).ReadFrom(buf)
		o.Addr = udpAddr(names, a)
	case "ReadFromUDP":
		var a *net.UDPAddr
		o.N, a, err = c.(udpConn).ReadFromUDP(buf)
		o.Addr = udpAddr(names, a)
	case "ReadFromUDPAddrPort":
		var ap netip.AddrPort
		o.N, ap, err = c.(udpConn).ReadFromUDPAddrPort(buf)
		o.Addr = udpAddrPort(names, ap)
	case "ReadMsgUDP":
		var a *net.UDPAddr
		o.N, o.OOBN, o.Flags, a, err = c.(udpConn).ReadMsgUDP(buf, nil)
		o.Addr = udpAddr(names, a)
	case "ReadMsgUDPAddrPort":
		var ap netip.AddrPort
		o.N, o.OOBN, o.Flags, ap, err = c.(udpConn).ReadMsgUDPAddrPort(buf, nil)
		o.Addr = udpAddrPort(names, ap)
	case "ReadFromUnix":
		var a *net.UnixAddr
		o.N, a, err = c.(unixDgramConn).ReadFromUnix(buf)
		o.Addr = udpAddr(names, a)
	case "ReadMsgUnix":
		var a *net.UnixAddr
		o.N, o.OOBN, o.Flags, a, err = c.(unixDgramConn).ReadMsgUnix(buf, nil)
		o.Addr = udpAddr(names, a)
	default:
		panic("udpRead: " + kind)
	}
	if o.N >= 0 && o.N <= len(buf) {
		o.Data = string(buf[:o.N])
	}
	o.Err = udpObserve(err, names)
	return o
}

// udpObserve is sockObserve with autobound Unix names masked.
func udpObserve(err error, names *sockNames) sockErrObs {
	o := sockObserve(err, names)
	o.Text = udpStr(names, o.Text)
	o.Source = udpStr(names, o.Source)
	o.Addr = udpStr(names, o.Addr)
	o.Inner = udpStr(names, o.Inner)
	return o
}

// udpWriteObs is one write's outcome.
type udpWriteObs struct {
	Kind    string
	N, OOBN int
	Err     sockErrObs
}

// The write methods, by name. "Write" is net.Conn's and ignores to.
var (
	udpWriteKinds  = []string{"WriteTo", "WriteToUDP", "WriteToUDPAddrPort", "WriteMsgUDP", "WriteMsgUDPAddrPort"}
	unixWriteKinds = []string{"WriteTo", "WriteToUnix", "WriteMsgUnix"}
)

// udpWrite writes b to to from c with the method kind. For the AddrPort
// methods a nil to is the zero AddrPort; for the typed ones, a typed nil.
func udpWrite(c net.Conn, kind string, b []byte, to net.Addr, names *sockNames) udpWriteObs {
	o := udpWriteObs{Kind: kind}
	ua, _ := to.(*net.UDPAddr)
	xa, _ := to.(*net.UnixAddr)
	var ap netip.AddrPort
	if ua != nil {
		ap = ua.AddrPort()
	}
	var err error
	switch kind {
	case "Write":
		o.N, err = c.Write(b)
	case "WriteTo":
		o.N, err = c.(net.PacketConn).WriteTo(b, to)
	case "WriteToUDP":
		o.N, err = c.(udpConn).WriteToUDP(b, ua)
	case "WriteToUDPAddrPort":
		o.N, err = c.(udpConn).WriteToUDPAddrPort(b, ap)
	case "WriteMsgUDP":
		o.N, o.OOBN, err = c.(udpConn).WriteMsgUDP(b, nil, ua)
	case "WriteMsgUDPAddrPort":
		o.N, o.OOBN, err = c.(udpConn).WriteMsgUDPAddrPort(b, nil, ap)
	case "WriteToUnix":
		o.N, err = c.(unixDgramConn).WriteToUnix(b, xa)
	case "WriteMsgUnix":
		o.N, o.OOBN, err = c.(unixDgramConn).WriteMsgUnix(b, nil, xa)
	default:
		panic("udpWrite: " + kind)
	}
	o.Err = udpObserve(err, names)
	return o
}

// udpTypeName is %T without the package, so that *net.UDPConn and
// *gatenet.UDPConn compare.
func udpTypeName(v any) string {
	s := fmt.Sprintf("%T", v)
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = strings.TrimRight(s[:i], "abcdefghijklmnopqrstuvwxyz") + s[i+1:]
	}
	return s
}

// udpSockOpt is getsockopt(level, opt) as an int, or -errno.
func udpSockOpt(t testing.TB, c any, level, opt int) int {
	t.Helper()
	var v int
	sockRawFD(t, c, func(fd int) {
		var err error
		if v, err = unix.GetsockoptInt(fd, level, opt); err != nil {
			v = -int(err.(syscall.Errno))
		}
	})
	return v
}

// udpWaitPendingError waits (up to a minute) until c's socket has an
// error pending (POLLERR), without consuming it.
func udpWaitPendingError(t testing.TB, c any) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var revents int16
		sockRawFD(t, c, func(fd int) {
			fds := []unix.PollFd{{Fd: int32(fd)}}
			if _, err := unix.Poll(fds, 10); err == nil {
				revents = fds[0].Revents
			}
		})
		if revents&unix.POLLERR != 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "no error became pending on the socket")
	}
}

// udpReadResult is a read started in a goroutine.
type udpReadResult struct {
	Obs  udpReadObs
	Done chan struct{}
}

// udpGoRead starts udpRead(c, kind) in a goroutine.
func udpGoRead(c net.Conn, kind string, buf []byte, names *sockNames) *udpReadResult {
	r := &udpReadResult{Done: make(chan struct{})}
	go func() {
		defer close(r.Done)
		r.Obs = udpRead(c, kind, buf, names)
	}()
	return r
}

// wait returns the read's outcome, failing t if it takes over a minute.
func (r *udpReadResult) wait(t testing.TB) udpReadObs {
	t.Helper()
	select {
	case <-r.Done:
		return r.Obs
	case <-time.After(time.Minute):
		t.Fatal("read still blocked after a minute")
		return udpReadObs{}
	}
}

// stillBlocked asserts the read has not returned after d (a lower bound).
func (r *udpReadResult) stillBlocked(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-r.Done:
		t.Fatalf("read returned early: %+v", r.Obs)
	case <-time.After(d):
	}
}

// udp4Trio is a gatenet and a net UDP socket on 127.0.0.1, the same
// datagrams sent to both compared, and a net socket to send them from;
// all closed when t ends.
func udp4Trio(t *testing.T) (g *gatenet.UDPConn, s, tx *net.UDPConn) {
	t.Helper()
	lo := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	g, err := gatenet.ListenUDP("udp4", lo)
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	s, err = net.ListenUDP("udp4", lo)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	tx, err = net.ListenUDP("udp4", lo)
	require.NoError(t, err)
	t.Cleanup(func() { tx.Close() })
	return g, s, tx
}
