//go:build linux

package gatenet_test

// Parity of datagram sockets' addresses and construction: LocalAddr and
// RemoteAddr in every state, the zero-value conn, FilePacketConn. Each
// scenario runs on net and on gatenet (sockParity, helpers_sock_test.go).

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// udpSockObs describes a datagram socket: its addresses and options, and
// what a Control function was given.
type udpSockObs struct {
	Type                 string
	Local, Remote        string
	LocalNet, RemoteNet  string
	Family, SoType       int
	V6Only, Broadcast    int
	ReuseAddr, AcceptCon int
	Nonblock, Cloexec    bool
	Control              string
	SenderIsLocal        bool // a peer reading our datagram sees LocalAddr
}

func udpDescribe(t *testing.T, c net.Conn, names *sockNames) udpSockObs {
	o := udpSockObs{
		Type:  udpTypeName(c),
		Local: udpAddr(names, c.LocalAddr()), Remote: udpAddr(names, c.RemoteAddr()),
		Family:    udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_DOMAIN),
		SoType:    udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_TYPE),
		V6Only:    udpSockOpt(t, c, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY),
		Broadcast: udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_BROADCAST),
		ReuseAddr: udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_REUSEADDR),
		AcceptCon: udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_ACCEPTCONN),
	}
	if a := c.LocalAddr(); a != nil {
		o.LocalNet = a.Network()
	}
	if a := c.RemoteAddr(); a != nil {
		o.RemoteNet = a.Network()
	}
	o.Nonblock, o.Cloexec = sockFlags(t, c)
	return o
}

// ListenPacket's, ListenUDP's and Dial's addresses, options and Control
// arguments ("udp" with ":0" is a dual-stack [::]:port, and so on).
func TestUDPParityAddresses(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, tc := range []struct{ network, address string }{
		{"udp", ":0"}, {"udp4", ":0"}, {"udp6", ":0"},
		{"udp", "127.0.0.1:0"}, {"udp", "[::1]:0"}, {"udp4", "127.0.0.1:0"}, {"udp6", "[::1]:0"},
		{"udp", "0.0.0.0:0"}, {"udp", "[::]:0"}, {"udp4", "0.0.0.0:0"}, {"udp6", "[::]:0"},
		{"udp", "localhost:0"}, {"udp", "[::ffff:127.0.0.1]:0"}, {"udp4", "[::ffff:127.0.0.1]:0"},
	} {
		t.Run("ListenPacket/"+tc.network+"/"+tc.address, func(t *testing.T) {
			if tc.network == "udp6" || strings.Contains(tc.address, "[") {
				udpSkipUnlessNetwork(t, "udp6")
			}
			sockParity(t, func(t *testing.T, s0 sockStack) udpSockObs {
				s := udpStackOf(s0)
				var ctrl string
				pc, err := s.ListenPacketWith(sockListenOpts{Control: func(network, address string, _ syscall.RawConn) error {
					ctrl = network + " " + address
					return nil
				}}, tc.network, tc.address)
				require.NoError(t, err)
				defer pc.Close()
				names := udpNames() // ports masked, addresses shown
				o := udpDescribe(t, pc.(net.Conn), names)
				o.Control = udpStr(names, ctrl)
				// Dial it on its loopback address; the peer sees LocalAddr.
				port := pc.LocalAddr().(*net.UDPAddr).Port
				host := "127.0.0.1"
				if o.Family == unix.AF_INET6 && tc.network == "udp6" || strings.Contains(tc.address, "::1") {
					host = "::1"
				}
				c := udpDial(t, s, "udp", net.JoinHostPort(host, strconv.Itoa(port)))
				_, err = c.Write([]byte("x"))
				require.NoError(t, err)
				_, from, err := pc.ReadFrom(make([]byte, 4))
				require.NoError(t, err)
				o.SenderIsLocal = from.String() == c.LocalAddr().String()
				return o
			}, func(t *testing.T, s sockStack, o udpSockObs) {
				require.Equal(t, "*UDPConn", o.Type)
				require.Equal(t, "udp", o.LocalNet)
				require.Equal(t, "<nil>", o.Remote)
				require.True(t, o.Nonblock)
				require.True(t, o.Cloexec)
				require.Equal(t, 1, o.Broadcast, "net sets SO_BROADCAST on IP datagram sockets")
				require.Equal(t, 0, o.ReuseAddr)
				require.True(t, o.SenderIsLocal)
				switch tc.network + " " + tc.address {
				case "udp :0", "udp6 :0", "udp [::]:0":
					require.Contains(t, o.Local, "*net.UDPAddr [::]:<port>")
				case "udp4 :0", "udp4 0.0.0.0:0":
					require.Contains(t, o.Local, "*net.UDPAddr 0.0.0.0:<port>")
				}
			})
		})
	}
	for _, tc := range []struct{ name, network, address string }{
		{"Dial/udp/127.0.0.1", "udp", "127.0.0.1"},
		{"Dial/udp4/127.0.0.1", "udp4", "127.0.0.1"},
		{"Dial/udp/::1", "udp", "::1"},
		{"Dial/udp6/::1", "udp6", "::1"},
		{"Dial/udp/localhost", "udp", "localhost"},
		{"Dial/udp/empty-host", "udp", ""},
		{"Dial/udp4/empty-host", "udp4", ""},
		{"Dial/udp6/empty-host", "udp6", ""},
		{"Dial/udp/::ffff:127.0.0.1", "udp", "::ffff:127.0.0.1"},
		{"DialUDP/udp/nil-IP", "udp", "DialUDP"},
		{"DialUDP/udp6/nil-IP", "udp6", "DialUDP"},
		{"DialUDP/udp4/laddr", "udp4", "DialUDP-laddr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			udpSkipUnlessNetwork(t, "udp6") // the server is dual-stack
			sockParity(t, func(t *testing.T, s0 sockStack) udpSockObs {
				s := udpStackOf(s0)
				// A dual-stack server, so that every destination reaches it.
				pc := udpListen(t, s, "udp", ":0")
				port := pc.LocalAddr().(*net.UDPAddr).Port
				names := udpNames(pc, "<S>")
				var c net.Conn
				var ctrl string
				switch tc.address {
				case "DialUDP":
					uc, err := s.DialUDP(tc.network, nil, &net.UDPAddr{Port: port})
					require.NoError(t, err)
					c = uc
				case "DialUDP-laddr":
					uc, err := s.DialUDP(tc.network, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
					require.NoError(t, err)
					c = uc
				default:
					var err error
					c, err = s.DialWith(context.Background(), sockDialOpts{Control: func(network, address string, _ syscall.RawConn) error {
						ctrl = network + " " + address
						return nil
					}}, tc.network, net.JoinHostPort(tc.address, strconv.Itoa(port)))
					require.NoError(t, err)
				}
				defer c.Close()
				names.add(c.LocalAddr(), "<C>")
				o := udpDescribe(t, c, names)
				o.Control = udpStr(names, ctrl)
				_, err := c.Write([]byte("x"))
				require.NoError(t, err)
				_, from, err := pc.ReadFrom(make([]byte, 4))
				require.NoError(t, err)
				// On the dual-stack server, an IPv4 sender is mapped.
				o.SenderIsLocal = strings.TrimPrefix(from.String(), "[::ffff:") == strings.TrimPrefix(c.LocalAddr().String(), "[::ffff:")
				return o
			}, func(t *testing.T, s sockStack, o udpSockObs) {
				require.Equal(t, "*UDPConn", o.Type)
				require.Equal(t, "udp", o.LocalNet)
				require.Equal(t, "udp", o.RemoteNet)
				require.Contains(t, o.Remote, "*net.UDPAddr")
				require.True(t, o.SenderIsLocal)
			})
		})
	}
}

// FilePacketConn: a copy of a UDP or unixgram socket (connected or not)
// that works and reports the same addresses; the errors for a stream
// socket and a non-socket; and a TCP socket handed to FilePacketConn is
// left as it was (no TCP options set on it).
func TestUDPParityFilePacketConn(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Orig, Copy    udpSockObs
		Err           sockErrObs
		Reads         []udpReadObs
		Writes        []udpWriteObs
		OrigStillWork bool
	}
	for _, how := range []string{"udp4", "udp6", "udp-connected", "unixgram", "unixgram-connected"} {
		t.Run(how, func(t *testing.T) {
			udpSkipUnlessNetwork(t, how)
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				var orig, peer net.Conn
				var names *sockNames
				switch how {
				case "udp4", "udp6":
					orig = udpListen(t, s, how, udpLoopback(how))
					peer = udpListen(t, s, how, udpLoopback(how))
					names = udpNames(orig, "<O>", peer, "<peer>")
				case "udp-connected":
					peer = udpListen(t, s, "udp4", "127.0.0.1:0")
					orig = udpDial(t, s, "udp4", peer.LocalAddr().String())
					names = udpNames(orig, "<O>", peer, "<peer>")
				case "unixgram":
					dir := t.TempDir()
					orig = udpListenUnixgram(t, s, dir+"/o")
					peer = udpListenUnixgram(t, s, dir+"/p")
					names = udpNames(dir, "<dir>")
				case "unixgram-connected":
					dir := t.TempDir()
					peer = udpListenUnixgram(t, s, dir+"/p")
					var err error
					orig, err = s.Dial("unixgram", dir+"/p")
					require.NoError(t, err)
					t.Cleanup(func() { orig.Close() })
					names = udpNames(dir, "<dir>")
				}
				var o obs
				o.Orig = udpDescribe(t, orig, names)
				f, err := orig.(interface{ File() (*os.File, error) }).File()
				require.NoError(t, err)
				pc, err := s.FilePacketConn(f)
				require.NoError(t, f.Close())
				o.Err = udpObserve(err, names)
				if pc == nil {
					return o
				}
				defer pc.Close()
				cp := pc.(net.Conn)
				o.Copy = udpDescribe(t, cp, names)
				buf := make([]byte, 64)
				connected := strings.HasSuffix(how, "-connected")
				// peer → copy (to the shared socket), read on the copy.
				if !connected {
					_, err = peer.(net.PacketConn).WriteTo([]byte("to copy"), orig.LocalAddr())
					require.NoError(t, err)
					o.Reads = append(o.Reads, udpRead(cp, "ReadFrom", buf, names))
				}
				// copy → peer.
				if connected {
					o.Writes = append(o.Writes, udpWrite(cp, "Write", []byte("from copy"), nil, names))
				} else {
					o.Writes = append(o.Writes, udpWrite(cp, "WriteTo", []byte("from copy"), peer.LocalAddr(), names))
				}
				o.Reads = append(o.Reads, udpRead(peer, "ReadFrom", buf, names))
				// The copy does not know it is connected (net's newFileFD
				// does not set isConnected): WriteTo its peer works.
				if connected && how != "unixgram-connected" {
					o.Writes = append(o.Writes, udpWrite(cp, "WriteTo", []byte("writeto"), peer.LocalAddr(), names))
					o.Reads = append(o.Reads, udpRead(peer, "ReadFrom", buf, names))
				}
				// Closing the copy leaves the original working.
				require.NoError(t, pc.Close())
				_, err = orig.Write([]byte("orig")) // connected: to peer
				if err != nil {
					_, err = orig.(net.PacketConn).WriteTo([]byte("orig"), peer.LocalAddr())
				}
				if err == nil {
					_, _, err = peer.(net.PacketConn).ReadFrom(buf)
				}
				o.OrigStillWork = err == nil
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				require.True(t, o.Err.Nil)
				orig, cp := o.Orig, o.Copy
				require.Equal(t, orig.Local, cp.Local)
				require.Equal(t, orig.Remote, cp.Remote)
				require.Equal(t, orig.Type, cp.Type)
				for _, r := range o.Reads {
					require.True(t, r.Err.Nil, "%+v", r)
				}
				for _, w := range o.Writes {
					require.True(t, w.Err.Nil, "%+v", w)
				}
				require.True(t, o.OrigStillWork)
			})
		})
	}

	// Sockets FilePacketConn refuses; and, for TCP, what it leaves set.
	type refusedObs struct {
		Err                   sockErrObs
		NoDelay, KeepAlive    int
		NoDelayAfter, KAAfter int
	}
	for _, kind := range []string{"tcp", "unix", "pipe"} {
		t.Run("refused/"+kind, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s0 sockStack) refusedObs {
				s := udpStackOf(s0)
				var o refusedObs
				var f *os.File
				var c net.Conn
				switch kind {
				case "tcp", "unix":
					c, _, _ = sockPair(t, s.sockStack, kind)
					if tc, ok := c.(sockTCPConn); ok {
						require.NoError(t, tc.SetNoDelay(false))
						require.NoError(t, tc.SetKeepAlive(false))
						o.NoDelay = udpSockOpt(t, c, unix.IPPROTO_TCP, unix.TCP_NODELAY)
						o.KeepAlive = udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
					}
					var err error
					f, err = c.(sockConn).File()
					require.NoError(t, err)
				case "pipe":
					r, w, err := os.Pipe()
					require.NoError(t, err)
					defer w.Close()
					f = r
				}
				defer f.Close()
				pc, err := s.FilePacketConn(f)
				names := udpNames()
				if c != nil {
					names = udpNames(c, "<C>")
				}
				o.Err = udpObserve(err, names)
				if pc != nil {
					o.Err.Text += " (succeeded as " + udpTypeName(pc) + ")"
					pc.Close()
				}
				if kind == "tcp" {
					o.NoDelayAfter = udpSockOpt(t, c, unix.IPPROTO_TCP, unix.TCP_NODELAY)
					o.KAAfter = udpSockOpt(t, c, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
				}
				return o
			}, func(t *testing.T, s sockStack, o refusedObs) {
				if kind == "unix" {
					return // a stream Unix socket is a *UnixConn, as net's
				}
				require.False(t, o.Err.Nil)
				require.Equal(t, "file", o.Err.Op)
				require.Equal(t, "file+net", o.Err.Net)
				require.Equal(t, o.NoDelay, o.NoDelayAfter, "FilePacketConn changed TCP_NODELAY")
				require.Equal(t, o.KeepAlive, o.KAAfter, "FilePacketConn changed SO_KEEPALIVE")
			})
		})
	}
}

// Methods on a zero value (no socket) return a bare EINVAL; on a nil
// pointer they panic, as net's do.
func TestUDPParityZeroConn(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Zero      []sockErrObs
		ZeroAddrs []string
		NilPanics []bool
	}
	panics := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	sockParity(t, func(t *testing.T, s0 sockStack) obs {
		s := udpStackOf(s0)
		var o obs
		z, zu := s.ZeroUDP(), s.ZeroUnix()
		names := udpNames()
		ua := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
		ap := ua.AddrPort()
		buf := make([]byte, 4)
		add := func(err error) { o.Zero = append(o.Zero, udpObserve(err, names)) }
		_, a, err := z.ReadFrom(buf)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddr(names, a))
		_, ua2, err := z.ReadFromUDP(buf)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddr(names, ua2))
		_, ap2, err := z.ReadFromUDPAddrPort(buf)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddrPort(names, ap2))
		_, _, _, ua2, err = z.ReadMsgUDP(buf, nil)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddr(names, ua2))
		_, _, _, ap2, err = z.ReadMsgUDPAddrPort(buf, nil)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddrPort(names, ap2))
		_, err = z.WriteTo(buf, ua)
		add(err)
		_, err = z.WriteToUDP(buf, ua)
		add(err)
		_, err = z.WriteToUDPAddrPort(buf, ap)
		add(err)
		_, _, err = z.WriteMsgUDP(buf, nil, ua)
		add(err)
		_, _, err = z.WriteMsgUDPAddrPort(buf, nil, ap)
		add(err)
		_, err = z.SyscallConn()
		add(err)
		_, a, err = zu.ReadFrom(buf)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddr(names, a))
		_, xa, err := zu.ReadFromUnix(buf)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddr(names, xa))
		_, _, _, xa, err = zu.ReadMsgUnix(buf, nil)
		add(err)
		o.ZeroAddrs = append(o.ZeroAddrs, udpAddr(names, xa))
		_, err = zu.WriteToUnix(buf, &net.UnixAddr{Name: "/x", Net: "unixgram"})
		add(err)
		_, _, err = zu.WriteMsgUnix(buf, nil, nil)
		add(err)
		n := s.NilUDP()
		for _, f := range []func(){
			func() { n.ReadFrom(buf) }, func() { n.ReadMsgUDP(buf, nil) }, func() { n.ReadFromUDPAddrPort(buf) },
			func() { n.WriteTo(buf, ua) }, func() { n.WriteToUDPAddrPort(buf, ap) }, func() { n.WriteMsgUDPAddrPort(buf, nil, ap) },
			func() { n.Close() }, func() { n.LocalAddr() },
		} {
			o.NilPanics = append(o.NilPanics, panics(f))
		}
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		for _, e := range o.Zero {
			require.True(t, e.EINVALBare, "%+v", e)
		}
	})
}
