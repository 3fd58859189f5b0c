//go:build linux

package gatenet_test

// Raw IP sockets (iprawsock.go) against net's, scenario by scenario
// (sockParity): network parsing and its errors, which need no privilege,
// and, where this process may open raw sockets (CAP_NET_RAW), packets
// exchanged on loopback under an unassigned protocol number, so that the
// kernel itself answers nothing.

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// rawProto is an IP protocol number IANA leaves for experiments (RFC
// 3692): nothing in the kernel answers it.
const rawProto = "253"

// rawAllowed reports whether this process may open raw IPv4 sockets.
func rawAllowed() bool {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 253)
	if err != nil {
		return false
	}
	unix.Close(s)
	return true
}

// ipStack is the raw-IP API of one library, every constructor returning
// an untyped nil on error.
type ipStack struct {
	ListenPacket   func(network, address string) (net.PacketConn, error)
	ListenIP       func(network string, laddr *net.IPAddr) (ipConn, error)
	DialIP         func(network string, laddr, raddr *net.IPAddr) (ipConn, error)
	Dial           func(network, address string) (net.Conn, error)
	DialerIP       func(ctx context.Context, network string, laddr, raddr netip.Addr) (ipConn, error)
	FilePacketConn func(f *os.File) (net.PacketConn, error)
}

// ipConn is the method set both libraries' IPConn have.
type ipConn interface {
	net.Conn
	net.PacketConn
	ReadFromIP(b []byte) (int, *net.IPAddr, error)
	ReadMsgIP(b, oob []byte) (n, oobn, flags int, addr *net.IPAddr, err error)
	WriteToIP(b []byte, addr *net.IPAddr) (int, error)
	WriteMsgIP(b, oob []byte, addr *net.IPAddr) (n, oobn int, err error)
	SyscallConn() (syscall.RawConn, error)
}

func ipConnOrNil[C ipConn](c C, err error) (ipConn, error) {
	if err != nil {
		return nil, err
	}
	return c, nil
}

func ipStackOf(s sockStack) ipStack {
	if s.isNet() {
		return ipStack{
			ListenPacket: net.ListenPacket,
			ListenIP: func(network string, laddr *net.IPAddr) (ipConn, error) {
				return ipConnOrNil(net.ListenIP(network, laddr))
			},
			DialIP: func(network string, laddr, raddr *net.IPAddr) (ipConn, error) {
				return ipConnOrNil(net.DialIP(network, laddr, raddr))
			},
			Dial: net.Dial,
			DialerIP: func(ctx context.Context, network string, laddr, raddr netip.Addr) (ipConn, error) {
				var d net.Dialer
				return ipConnOrNil(d.DialIP(ctx, network, laddr, raddr))
			},
			FilePacketConn: net.FilePacketConn,
		}
	}
	return ipStack{
		ListenPacket: gatenet.ListenPacket,
		ListenIP: func(network string, laddr *net.IPAddr) (ipConn, error) {
			return ipConnOrNil(gatenet.ListenIP(network, laddr))
		},
		DialIP: func(network string, laddr, raddr *net.IPAddr) (ipConn, error) {
			return ipConnOrNil(gatenet.DialIP(network, laddr, raddr))
		},
		Dial: gatenet.Dial,
		DialerIP: func(ctx context.Context, network string, laddr, raddr netip.Addr) (ipConn, error) {
			var d gatenet.Dialer
			return ipConnOrNil(d.DialIP(ctx, network, laddr, raddr))
		},
		FilePacketConn: gatenet.FilePacketConn,
	}
}

// Network names and addresses: what each constructor makes of them. With
// CAP_NET_RAW the good ones open sockets; without it they fail in the
// same way on both.
func TestIPRawParityNetworks(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	loopback := &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)}
	for _, tc := range []struct {
		name string
		open func(ipStack) (any, error)
	}{
		{"listenpacket-number", func(s ipStack) (any, error) { return s.ListenPacket("ip4:"+rawProto, "127.0.0.1") }},
		{"listenpacket-name", func(s ipStack) (any, error) { return s.ListenPacket("ip4:ICMP", "127.0.0.1") }},
		{"listenpacket-ip-any", func(s ipStack) (any, error) { return s.ListenPacket("ip:"+rawProto, "") }},
		{"listenpacket-no-proto", func(s ipStack) (any, error) { return s.ListenPacket("ip4", "127.0.0.1") }},
		{"listenpacket-unknown-proto", func(s ipStack) (any, error) { return s.ListenPacket("ip4:no-such-protocol", "127.0.0.1") }},
		{"listenpacket-long-proto", func(s ipStack) (any, error) { return s.ListenPacket("ip4:icmpicmpicmpicmpicmpicmpicmp", "127.0.0.1") }},
		{"listenpacket-proto-too-big", func(s ipStack) (any, error) { return s.ListenPacket("ip4:16777216", "127.0.0.1") }},
		{"listenpacket-proto-300", func(s ipStack) (any, error) { return s.ListenPacket("ip4:300", "127.0.0.1") }},
		{"listenpacket-port", func(s ipStack) (any, error) { return s.ListenPacket("ip4:"+rawProto, "127.0.0.1:80") }},
		{"listenpacket-bad-family", func(s ipStack) (any, error) { return s.ListenPacket("ipx:"+rawProto, "127.0.0.1") }},
		{"listenpacket-v6-on-v4", func(s ipStack) (any, error) { return s.ListenPacket("ip6:"+rawProto, "127.0.0.1") }},
		{"listenip-nil", func(s ipStack) (any, error) { return s.ListenIP("ip4:"+rawProto, nil) }},
		{"listenip-tcp", func(s ipStack) (any, error) { return s.ListenIP("tcp", loopback) }},
		{"dialip", func(s ipStack) (any, error) { return s.DialIP("ip4:"+rawProto, nil, loopback) }},
		{"dialip-nil-raddr", func(s ipStack) (any, error) { return s.DialIP("ip4:"+rawProto, nil, nil) }},
		{"dialip-udp", func(s ipStack) (any, error) { return s.DialIP("udp", nil, loopback) }},
		{"dial", func(s ipStack) (any, error) { return s.Dial("ip4:"+rawProto, "127.0.0.1") }},
		{"dial-empty", func(s ipStack) (any, error) { return s.Dial("ip4:"+rawProto, "") }},
		{"dialer-dialip", func(s ipStack) (any, error) {
			return s.DialerIP(context.Background(), "ip4:"+rawProto, netip.Addr{}, netip.MustParseAddr("127.0.0.1"))
		}},
		{"dialer-dialip-zero-raddr", func(s ipStack) (any, error) {
			return s.DialerIP(context.Background(), "ip4:"+rawProto, netip.Addr{}, netip.Addr{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type obs struct {
				Err           sockErrObs
				Local, Remote string
				LocalNet      string
			}
			sockParity(t, func(t *testing.T, s sockStack) obs {
				var names sockNames
				c, err := tc.open(ipStackOf(s))
				o := obs{Err: sockObserve(err, &names)}
				if err != nil {
					return o
				}
				switch c := c.(type) {
				case net.Conn:
					defer c.Close()
					o.Local, o.Remote = names.addr(c.LocalAddr()), names.addr(c.RemoteAddr())
					o.LocalNet = c.LocalAddr().Network()
				case net.PacketConn:
					defer c.Close()
					o.Local, o.LocalNet = names.addr(c.LocalAddr()), c.LocalAddr().Network()
				}
				return o
			}, nil)
		})
	}
}

// rawPair is a raw socket bound to 127.0.0.1 (unconnected) and one dialed
// to it (connected), both for rawProto.
func rawPair(t *testing.T, s ipStack) (listener, dialed ipConn) {
	pc, err := s.ListenPacket("ip4:"+rawProto, "127.0.0.1")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	c, err := s.DialIP("ip4:"+rawProto, nil, &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return pc.(ipConn), c
}

// Packets both ways on loopback, through every read and write method.
func TestIPRawParityExchange(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	if !rawAllowed() {
		t.Skip("raw sockets need CAP_NET_RAW")
	}
	type obs struct {
		Local, Remote       string
		ReadFromN           int
		ReadFromAddr        string
		ReadFromData        string
		ReadMsgN, ReadMsgHL int // ReadMsgIP keeps the IPv4 header
		ReadMsgFlags        int
		ReadMsgData         string
		WriteToIP           sockErrObs // listener → 127.0.0.1
		WriteToUDPAddr      sockErrObs // an address of the wrong kind
		WriteToConnected    sockErrObs
		WriteMsgConnected   sockErrObs
		WriteMsgNil         sockErrObs
		WriteToNil          sockErrObs
		ReadDeadline        sockErrObs
		ReadAfterClose      sockErrObs
		FileConnType        string
	}
	sockParity(t, func(t *testing.T, s sockStack) obs {
		is := ipStackOf(s)
		ln, c := rawPair(t, is)
		var names sockNames
		names.add(ln.LocalAddr(), "listener")
		var o obs
		o.Local, o.Remote = names.addr(c.LocalAddr()), names.addr(c.RemoteAddr())
		deadline := time.Now().Add(10 * time.Second)
		require.NoError(t, ln.SetReadDeadline(deadline))

		_, err := c.Write([]byte("first"))
		require.NoError(t, err)
		buf := make([]byte, 128)
		n, from, err := ln.ReadFromIP(buf)
		require.NoError(t, err)
		o.ReadFromN, o.ReadFromAddr, o.ReadFromData = n, names.addr(from), string(buf[:n])

		_, err = c.Write([]byte("second"))
		require.NoError(t, err)
		oob := make([]byte, 64)
		n, _, flags, _, err := ln.ReadMsgIP(buf, oob)
		require.NoError(t, err)
		o.ReadMsgN, o.ReadMsgHL, o.ReadMsgFlags = n, int(buf[0]&0x0f)<<2, flags
		o.ReadMsgData = string(buf[o.ReadMsgHL:n])

		var werr error
		_, werr = ln.WriteToIP([]byte("third"), &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
		o.WriteToIP = sockObserve(werr, &names)
		_, werr = ln.WriteTo([]byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
		o.WriteToUDPAddr = sockObserve(werr, &names)
		_, werr = c.WriteToIP([]byte("x"), &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
		o.WriteToConnected = sockObserve(werr, &names)
		_, _, werr = c.WriteMsgIP([]byte("x"), nil, &net.IPAddr{IP: net.IPv4(127, 0, 0, 1)})
		o.WriteMsgConnected = sockObserve(werr, &names)
		_, _, werr = ln.WriteMsgIP([]byte("x"), nil, nil)
		o.WriteMsgNil = sockObserve(werr, &names)
		_, werr = ln.WriteToIP([]byte("x"), nil)
		o.WriteToNil = sockObserve(werr, &names)

		// Drain what reached the listener ("third" from itself), then time out.
		for {
			require.NoError(t, ln.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
			if _, _, err := ln.ReadFrom(buf); err != nil {
				o.ReadDeadline = sockObserve(err, &names)
				break
			}
		}
		f, err := ln.(interface{ File() (*os.File, error) }).File()
		require.NoError(t, err)
		fc, err := is.FilePacketConn(f)
		f.Close()
		require.NoError(t, err)
		typ := sockTypeName(fc) // *net.IPConn, *gatenet.IPConn
		o.FileConnType = typ[strings.LastIndexByte(typ, '.')+1:]
		fc.Close()

		require.NoError(t, c.SetReadDeadline(time.Time{}))
		done := make(chan error, 1)
		go func() {
			_, err := c.Read(buf)
			for err == nil { // c sees its own packets too: read past them
				_, err = c.Read(buf)
			}
			done <- err
		}()
		time.Sleep(50 * time.Millisecond)
		require.NoError(t, c.Close())
		o.ReadAfterClose = sockObserve(<-done, &names)
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, "first", o.ReadFromData)
		require.Equal(t, 5, o.ReadFromN, "the IPv4 header stripped")
		require.Equal(t, "second", o.ReadMsgData)
		require.Equal(t, 20+6, o.ReadMsgN)
		require.True(t, o.WriteToIP.Nil)
		require.True(t, o.ReadDeadline.Deadline)
		require.True(t, o.ReadAfterClose.Closed)
	})
}

// A raw IPv6 socket has no header to strip.
func TestIPRawParityIPv6(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	if !rawAllowed() {
		t.Skip("raw sockets need CAP_NET_RAW")
	}
	if !supportsIPv6Loopback() {
		t.Skip("no IPv6 loopback")
	}
	type obs struct {
		N    int
		From string
		Data string
	}
	sockParity(t, func(t *testing.T, s sockStack) obs {
		is := ipStackOf(s)
		pc, err := is.ListenPacket("ip6:"+rawProto, "::1")
		require.NoError(t, err)
		defer pc.Close()
		c, err := is.DialerIP(context.Background(), "ip6:"+rawProto, netip.Addr{}, netip.MustParseAddr("::1"))
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte("six"))
		require.NoError(t, err)
		require.NoError(t, pc.SetReadDeadline(time.Now().Add(10*time.Second)))
		buf := make([]byte, 64)
		n, from, err := pc.ReadFrom(buf)
		require.NoError(t, err)
		return obs{n, from.String(), string(buf[:n])}
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, obs{3, "::1", "six"}, o)
	})
}
