//go:build linux

package gatenet_test

// Parity for the Dialer's typed dials of Go 1.26 — DialTCP, DialUDP and
// DialUnix with a context — against net's, case by case (sockParity).

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/internal/testutil"
)

// typedDialObs is what a typed dial gives its caller.
type typedDialObs struct {
	Err             sockErrObs
	Type            string // the conn's type name, package dropped
	Local, Remote   string // the conn's addresses, as symbols
	LocalNet        string
	DataCrossed     bool
	PanicNilContext string // what a nil context panics with
}

// typedDialCase builds the arguments of one dial against the listening
// socket's address; dial returns the conn (or nil) and its error.
type typedDialCase struct {
	name string
	dial func(t *testing.T, s sockStack, target net.Addr) (net.Conn, error)
	// listen is "tcp", "udp", "unix" or "unixgram": what the target is.
	listen string
	ok     bool
}

func typedDialCases() []typedDialCase {
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	tcp := func(network string, o sockDialOpts, ctx context.Context, local func(netip.AddrPort) netip.AddrPort, remote func(netip.AddrPort) netip.AddrPort) func(*testing.T, sockStack, net.Addr) (net.Conn, error) {
		return func(t *testing.T, s sockStack, target net.Addr) (net.Conn, error) {
			ap := target.(*net.TCPAddr).AddrPort()
			return s.DialerTCP(ctx, o, network, local(ap), remote(ap))
		}
	}
	udp := func(network string, remote func(netip.AddrPort) netip.AddrPort) func(*testing.T, sockStack, net.Addr) (net.Conn, error) {
		return func(t *testing.T, s sockStack, target net.Addr) (net.Conn, error) {
			return s.DialerUDP(bg, sockDialOpts{}, network, netip.AddrPort{}, remote(target.(*net.UDPAddr).AddrPort()))
		}
	}
	unixDial := func(network string, withRaddr bool) func(*testing.T, sockStack, net.Addr) (net.Conn, error) {
		return func(t *testing.T, s sockStack, target net.Addr) (net.Conn, error) {
			var raddr *net.UnixAddr
			if withRaddr {
				raddr = target.(*net.UnixAddr)
			}
			return s.DialerUnix(bg, sockDialOpts{}, network, nil, raddr)
		}
	}
	zero := func(netip.AddrPort) netip.AddrPort { return netip.AddrPort{} }
	same := func(ap netip.AddrPort) netip.AddrPort { return ap }
	loopback := func(netip.AddrPort) netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:0") }
	return []typedDialCase{
		{"tcp", tcp("tcp", sockDialOpts{}, bg, zero, same), "tcp", true},
		{"tcp4-laddr", tcp("tcp4", sockDialOpts{}, bg, loopback, same), "tcp", true},
		{"tcp-mptcp", tcp("tcp", sockDialOpts{MPTCP: boolPtr(true)}, bg, zero, same), "tcp", true},
		{"tcp-unknown-network", tcp("udp", sockDialOpts{}, bg, zero, same), "tcp", false},
		{"tcp-zero-raddr", tcp("tcp4", sockDialOpts{}, bg, zero, zero), "tcp", false},
		{"tcp-canceled", tcp("tcp", sockDialOpts{}, canceled, zero, same), "tcp", false},
		{"tcp-deadline-passed", tcp("tcp", sockDialOpts{Deadline: time.Now().Add(-time.Second)}, bg, zero, same), "tcp", false},
		{"udp", udp("udp", same), "udp", true},
		{"udp-unknown-network", udp("tcp", same), "udp", false},
		{"unix", unixDial("unix", true), "unix", true},
		{"unixgram", unixDial("unixgram", true), "unixgram", true},
		{"unix-nil-raddr", unixDial("unix", false), "unix", false},
		{"unix-unknown-network", unixDial("tcp", true), "unix", false},
	}
}

func TestSockParityDialerTyped(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	for _, tc := range typedDialCases() {
		t.Run(tc.name, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) typedDialObs {
				return typedDialScenario(t, s, tc)
			}, func(t *testing.T, s sockStack, o typedDialObs) {
				require.Equal(t, tc.ok, o.Err.Nil, "%+v", o.Err)
				require.Equal(t, tc.ok, o.DataCrossed)
				require.Equal(t, "nil context", o.PanicNilContext)
			})
		})
	}
}

func typedDialScenario(t *testing.T, s sockStack, tc typedDialCase) typedDialObs {
	var names sockNames
	var target net.Addr
	var recv func() bool // reads what the dialed conn wrote
	switch tc.listen {
	case "tcp", "unix":
		address := "127.0.0.1:0"
		if tc.listen == "unix" {
			address = t.TempDir() + "/s"
		}
		ln, err := s.Listen(tc.listen, address)
		require.NoError(t, err)
		defer ln.Close()
		target = ln.Addr()
		recv = func() bool {
			c, err := ln.Accept()
			if err != nil {
				return false
			}
			defer c.Close()
			buf := make([]byte, 1)
			n, _ := c.Read(buf)
			return n == 1
		}
	case "udp", "unixgram":
		address := "127.0.0.1:0"
		if tc.listen == "unixgram" {
			address = t.TempDir() + "/s"
		}
		pc, err := sockPacketListen(s, tc.listen, address)
		require.NoError(t, err)
		defer pc.Close()
		target = pc.LocalAddr()
		recv = func() bool {
			require.NoError(t, pc.SetReadDeadline(time.Now().Add(10*time.Second)))
			buf := make([]byte, 8)
			n, _, _ := pc.ReadFrom(buf)
			return n == 1
		}
	}
	names.add(target, "target")

	var o typedDialObs
	c, err := tc.dial(t, s, target)
	o.Err = sockObserve(err, &names)
	if c != nil {
		defer c.Close()
		typ := fmt.Sprintf("%T", c) // *net.TCPConn, *gatenet.TCPConn
		o.Type = typ[strings.LastIndexByte(typ, '.')+1:]
		names.add(c.LocalAddr(), "local")
		o.Local, o.Remote = names.addr(c.LocalAddr()), names.addr(c.RemoteAddr())
		o.LocalNet = c.LocalAddr().Network()
		_, err := c.Write([]byte{1})
		require.NoError(t, err)
		o.DataCrossed = recv()
	}
	o.PanicNilContext = typedDialNilContextPanic(s)
	return o
}

// typedDialNilContextPanic is what DialTCP with a nil context panics
// with, as text ("" if it does not panic).
func typedDialNilContextPanic(s sockStack) (text string) {
	defer func() {
		if r := recover(); r != nil {
			text = fmt.Sprint(r)
		}
	}()
	var nilCtx context.Context // the misuse under test
	c, _ := s.DialerTCP(nilCtx, sockDialOpts{}, "tcp", netip.AddrPort{}, netip.MustParseAddrPort("127.0.0.1:1"))
	if c != nil {
		c.Close()
	}
	return ""
}

// sockPacketListen is the stack's ListenPacket.
func sockPacketListen(s sockStack, network, address string) (net.PacketConn, error) {
	if s.isNet() {
		return udpNetStack.ListenPacket(network, address)
	}
	return udpGatenetStack.ListenPacket(network, address)
}

// TestSockParityDialUnixUnnamed: a Unix raddr with no name is none, as
// in net's unixSocket: "missing address" (gatenet panicked in connect
// with it), except for a datagram socket bound to laddr, which is left
// unconnected and sends with WriteTo.
func TestSockParityDialUnixUnnamed(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	type obs struct {
		Err           sockErrObs
		Local, Remote string
		SentTo        bool // an unconnected datagram conn's WriteTo reached the target
	}
	for _, network := range []string{"unix", "unixgram", "unixpacket"} {
		for _, tc := range []struct {
			name          string
			laddr, noName bool // noName: raddr is &UnixAddr{} with no name, else nil
			lNoName       bool // laddr is &UnixAddr{} with no name: none, as net reads it
		}{
			{"unnamed", false, true, false},
			{"laddr-unnamed", true, true, false},
			{"laddr-nil", true, false, false},
			{"unnamed-laddr-nil", false, false, true},
			{"unnamed-laddr-unnamed", false, true, true},
		} {
			t.Run(network+"/"+tc.name, func(t *testing.T) {
				sockParity(t, func(t *testing.T, s sockStack) obs {
					dir := t.TempDir()
					names := &sockNames{}
					var laddr, raddr *net.UnixAddr
					if tc.laddr {
						laddr = &net.UnixAddr{Name: dir + "/local", Net: network}
						names.add(laddr, "<local>")
					}
					if tc.lNoName {
						laddr = &net.UnixAddr{Net: network}
					}
					if tc.noName {
						raddr = &net.UnixAddr{Net: network}
					}
					c, err := s.DialerUnix(context.Background(), sockDialOpts{}, network, laddr, raddr)
					o := obs{Err: sockObserve(err, names)}
					if c == nil {
						return o
					}
					defer c.Close()
					o.Local, o.Remote = names.addr(c.LocalAddr()), names.addr(c.RemoteAddr())
					target, err := sockPacketListen(s, network, dir+"/target")
					require.NoError(t, err)
					defer target.Close()
					_, err = c.(net.PacketConn).WriteTo([]byte{1}, target.LocalAddr())
					require.NoError(t, err)
					require.NoError(t, target.SetReadDeadline(time.Now().Add(10*time.Second)))
					n, _, _ := target.ReadFrom(make([]byte, 8))
					o.SentTo = n == 1
					return o
				}, func(t *testing.T, s sockStack, o obs) {
					ok := network == "unixgram" && tc.laddr
					require.Equal(t, ok, o.Err.Nil, "%+v", o.Err)
					require.Equal(t, ok, o.SentTo)
				})
			})
		}
	}
}
