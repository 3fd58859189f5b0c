//go:build linux

package gatenet_test

// Parity for datagram sockets (UDP and unixgram): each scenario runs on
// net and on gatenet through sockParity (helpers_sock_test.go), and what
// the caller observes must be the same, field by field. The expectations
// are checked against net too. Rows are those of the conformance
// checklist in stdlib-behaviour.md §11.

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// Row 10 (a zero-length datagram reads as (0, addr, nil), never EOF) and
// row 8 (a connected Write(nil) sends an empty datagram), for every read
// method, from an unconnected sender (each write method with an empty
// payload) and a connected one.
func TestUDPParityZeroLength(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Sends    []udpWriteObs
		Reads    []udpReadObs
		ConnRead udpReadObs
	}
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				pc := udpListen(t, s, network, udpLoopback(network))
				snd := udpListen(t, s, network, udpLoopback(network))
				c := udpDial(t, s, network, pc.LocalAddr().String())
				names := udpNames(pc, "<P>", snd, "<S>", c, "<C>")
				buf := make([]byte, 64)
				var o obs
				for i, kind := range udpReadKinds {
					wkind := udpWriteKinds[i%len(udpWriteKinds)]
					o.Sends = append(o.Sends, udpWrite(snd, wkind, nil, pc.LocalAddr(), names))
					o.Reads = append(o.Reads, udpRead(pc, kind, buf, names))
					o.Sends = append(o.Sends, udpWrite(c, "Write", []byte{}, nil, names))
					o.Reads = append(o.Reads, udpRead(pc, kind, buf, names))
				}
				_, err := pc.WriteTo(nil, c.LocalAddr())
				require.NoError(t, err)
				o.ConnRead = udpRead(c, "Read", buf, names)
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				for _, w := range o.Sends {
					require.True(t, w.Err.Nil, "%+v", w)
					require.Zero(t, w.N)
				}
				for i, r := range o.Reads {
					require.True(t, r.Err.Nil, "%+v", r)
					require.Zero(t, r.N)
					require.Zero(t, r.Flags)
					if r.Kind != "Read" {
						require.Contains(t, r.Addr, []string{"<S>", "<C>"}[i%2], "%+v", r)
					}
				}
				require.True(t, o.ConnRead.Err.Nil, "a connected Read of an empty datagram is (0, nil), not EOF")
				require.Zero(t, o.ConnRead.N)
			})
		})
	}
}

// Row 11: UDPConn.ReadFrom(nil) consumes a datagram (as do the other
// datagram reads with an empty buffer); conn.Read(nil) does not.
func TestUDPParityReadNil(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	sockParity(t, func(t *testing.T, s0 sockStack) []udpReadObs {
		s := udpStackOf(s0)
		pc := udpListen(t, s, "udp4", "127.0.0.1:0")
		c := udpDial(t, s, "udp4", pc.LocalAddr().String())
		names := udpNames(pc, "<P>", c, "<C>")
		for _, d := range []string{"one", "two", "three", "four", "five"} {
			_, err := c.Write([]byte(d))
			require.NoError(t, err)
		}
		var o []udpReadObs
		o = append(o, udpRead(pc, "Read", nil, names))
		o = append(o, udpRead(pc, "ReadFrom", nil, names))
		o = append(o, udpRead(pc, "Read", []byte{}, names))
		o = append(o, udpRead(pc, "ReadFromUDPAddrPort", nil, names))
		o = append(o, udpRead(pc, "ReadMsgUDP", nil, names))
		o = append(o, udpRead(pc, "ReadFromUDP", []byte{}, names))
		o = append(o, udpRead(pc, "Read", nil, names))
		o = append(o, udpRead(pc, "ReadFrom", make([]byte, 16), names))
		return o
	}, func(t *testing.T, s sockStack, o []udpReadObs) {
		for _, r := range o[:7] {
			require.True(t, r.Err.Nil, "%+v", r)
			require.Zero(t, r.N)
		}
		require.Equal(t, "", o[0].Addr, "Read reports no sender")
		require.Contains(t, o[1].Addr, "<C>")
		require.Equal(t, unix.MSG_TRUNC, o[4].Flags, "ReadMsgUDP(nil) of a 3-byte datagram")
		require.Equal(t, "five", o[7].Data, "Read(nil) consumed nothing; the 4 other empty reads consumed one each")
	})
}

// Row 48: truncation is silent in ReadFrom (n == len(buf), nil error);
// ReadMsgUDP reports MSG_TRUNC in flags. The rest of a truncated datagram
// is gone: the next read gets the next datagram.
func TestUDPParityTruncation(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, network := range []string{"udp4", "udp6", "unixgram"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) []udpReadObs {
				s := udpStackOf(s0)
				var pc, c net.Conn
				kinds := udpReadKinds
				if network == "unixgram" {
					kinds = unixReadKinds
					pc = udpListenUnixgram(t, s, t.TempDir()+"/p")
					var err error
					c, err = s.Dial("unixgram", pc.LocalAddr().String())
					require.NoError(t, err)
					t.Cleanup(func() { c.Close() })
				} else {
					pc = udpListen(t, s, network, udpLoopback(network))
					c = udpDial(t, s, network, pc.LocalAddr().String())
				}
				names := udpNames(pc, "<P>", c, "<C>")
				var o []udpReadObs
				for _, kind := range kinds {
					for _, d := range []string{"hello", "world!"} {
						_, err := c.Write([]byte(d))
						require.NoError(t, err)
					}
					o = append(o, udpRead(pc, kind, make([]byte, 2), names))
					o = append(o, udpRead(pc, kind, make([]byte, 16), names))
				}
				// The connected end, with Read (a unixgram dialer is
				// unnamed: there is no address to write back to).
				if network != "unixgram" {
					_, err := pc.(net.PacketConn).WriteTo([]byte("back at you"), c.LocalAddr())
					require.NoError(t, err)
					o = append(o, udpRead(c, "Read", make([]byte, 4), names))
				}
				return o
			}, func(t *testing.T, s sockStack, o []udpReadObs) {
				for i, r := range o {
					require.True(t, r.Err.Nil, "%+v", r)
					if i == len(o)-1 && r.Kind == "Read" && network != "unixgram" {
						require.Equal(t, "back", r.Data)
						continue
					}
					if i%2 == 0 {
						require.Equal(t, "he", r.Data, "%+v", r)
						if strings.HasPrefix(r.Kind, "ReadMsg") {
							require.NotZero(t, r.Flags&unix.MSG_TRUNC, "%+v", r)
						}
					} else {
						require.Equal(t, "world!", r.Data, "%+v", r)
						require.Zero(t, r.Flags&unix.MSG_TRUNC, "%+v", r)
					}
				}
			})
		})
	}
}

// Row 49, first half: every WriteTo method on a connected socket fails
// with net.ErrWriteToConnected, in the same *net.OpError, whatever the
// address (a typed nil too: the connected check comes first). WriteMsgUDP
// with no address sends to the peer; on a connected unixgram socket
// WriteMsgUnix refuses even a nil address, as net's does.
func TestUDPParityWriteToConnected(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Refused []udpWriteObs
		Untyped udpWriteObs // WriteTo(b, nil): not a *UDPAddr, EINVAL
		Sent    []udpWriteObs
		Reads   []udpReadObs
	}
	for _, how := range []string{"Dial", "DialUDP", "unixgram"} {
		t.Run(how, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				var pc, c net.Conn
				switch how {
				case "Dial":
					pc = udpListen(t, s, "udp", "127.0.0.1:0")
					c = udpDial(t, s, "udp", pc.LocalAddr().String())
				case "DialUDP":
					pc = udpListen(t, s, "udp4", "127.0.0.1:0")
					uc, err := s.DialUDP("udp4", nil, pc.LocalAddr().(*net.UDPAddr))
					require.NoError(t, err)
					t.Cleanup(func() { uc.Close() })
					c = uc
				case "unixgram":
					pc = udpListenUnixgram(t, s, t.TempDir()+"/p")
					var err error
					c, err = s.Dial("unixgram", pc.LocalAddr().String())
					require.NoError(t, err)
					t.Cleanup(func() { c.Close() })
				}
				names := udpNames(pc, "<P>", c, "<C>")
				var o obs
				if how == "unixgram" {
					for _, kind := range unixWriteKinds {
						o.Refused = append(o.Refused, udpWrite(c, kind, []byte("x"), pc.LocalAddr(), names))
					}
					o.Refused = append(o.Refused, udpWrite(c, "WriteToUnix", []byte("x"), nil, names))
					o.Refused = append(o.Refused, udpWrite(c, "WriteMsgUnix", []byte("x"), nil, names))
					o.Sent = append(o.Sent, udpWrite(c, "Write", []byte("m1"), nil, names))
					o.Reads = append(o.Reads, udpRead(pc, "ReadFromUnix", make([]byte, 8), names))
				} else {
					for _, kind := range udpWriteKinds {
						o.Refused = append(o.Refused, udpWrite(c, kind, []byte("x"), pc.LocalAddr(), names))
					}
					o.Refused = append(o.Refused, udpWrite(c, "WriteToUDP", []byte("x"), nil, names))
					o.Refused = append(o.Refused, udpWrite(c, "WriteToUDPAddrPort", []byte("x"), nil, names))
					uc := c.(udpConn)
					n, oobn, err := uc.WriteMsgUDP([]byte("m1"), nil, nil)
					o.Sent = append(o.Sent, udpWriteObs{Kind: "WriteMsgUDP(nil)", N: n, OOBN: oobn, Err: udpObserve(err, names)})
					n, oobn, err = uc.WriteMsgUDPAddrPort([]byte("m2"), nil, netip.AddrPort{})
					o.Sent = append(o.Sent, udpWriteObs{Kind: "WriteMsgUDPAddrPort({})", N: n, OOBN: oobn, Err: udpObserve(err, names)})
					o.Reads = append(o.Reads, udpRead(pc, "ReadFromUDP", make([]byte, 8), names))
					o.Reads = append(o.Reads, udpRead(pc, "ReadFromUDP", make([]byte, 8), names))
				}
				o.Untyped = udpWrite(c, "WriteTo", []byte("x"), nil, names)
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				for _, w := range o.Refused {
					require.Equal(t, "write", w.Err.Op, "%+v", w)
					require.Contains(t, w.Err.Text, "use of WriteTo with pre-connected connection", "%+v", w)
					if how == "unixgram" {
						require.Equal(t, "*net.UnixAddr @", w.Err.Source, "the dialer is unnamed")
					} else {
						require.Equal(t, "*net.UDPAddr <C>", w.Err.Source, "%+v", w)
					}
					require.Zero(t, w.N)
				}
				require.Contains(t, o.Refused[0].Err.Addr, "<P>")
				require.Equal(t, "syscall.Errno: invalid argument", o.Untyped.Err.Inner)
				require.Equal(t, "<nil>", o.Untyped.Err.Addr)
				for _, w := range o.Sent {
					require.True(t, w.Err.Nil, "%+v", w)
					require.Equal(t, 2, w.N)
				}
				for i, r := range o.Reads {
					require.True(t, r.Err.Nil)
					require.Equal(t, []string{"m1", "m2"}[i], r.Data)
				}
			})
		})
	}
}

// Row 49, second half: a connected UDP socket sees the ICMP port
// unreachable its datagram to a closed loopback port provokes: the next
// read (whichever method) fails with ECONNREFUSED, and so does a write
// while the error is pending. An unconnected socket never sees it.
func TestUDPParityConnRefused(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Reads       []udpReadObs
		Writes      []udpWriteObs
		Unconnected udpReadObs
	}
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			// A loopback port nobody listens on.
			l, err := net.ListenPacket(network, udpLoopback(network))
			require.NoError(t, err)
			closed := l.LocalAddr()
			l.Close()
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				c := udpDial(t, s, network, closed.String())
				names := udpNames(c, "<C>", closed, "<closed>")
				// A safety net: a lost ICMP shows as a timeout, not a hang.
				require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
				var o obs
				for _, kind := range udpReadKinds {
					_, err := c.Write([]byte(kind))
					require.NoError(t, err)
					o.Reads = append(o.Reads, udpRead(c, kind, make([]byte, 64), names))
				}
				for _, kind := range []string{"Write", "WriteMsgUDP"} {
					_, err := c.Write([]byte("provoke"))
					require.NoError(t, err)
					udpWaitPendingError(t, c)
					o.Writes = append(o.Writes, udpWrite(c, kind, []byte("refused"), nil, names))
				}
				// Unconnected: WriteTo the closed port, then a read times out.
				pc := udpListen(t, s, network, udpLoopback(network))
				names.add(pc.LocalAddr(), "<P>")
				_, err := pc.WriteTo([]byte("x"), closed)
				require.NoError(t, err)
				require.NoError(t, pc.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
				o.Unconnected = udpRead(pc, "ReadFrom", make([]byte, 8), names)
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				for _, r := range o.Reads {
					require.Equal(t, "ECONNREFUSED", r.Err.Errno, "%+v", r)
					require.Equal(t, "read", r.Err.Op)
					require.Contains(t, r.Err.Addr, "<closed>")
					// net's ReadMsg methods report n == -1 on error
					// (internal/poll does not clear recvmsg's count).
					require.LessOrEqual(t, r.N, 0)
				}
				require.Equal(t, "read", o.Reads[len(o.Reads)-1].Err.Syscall)
				require.Equal(t, "recvfrom", o.Reads[0].Err.Syscall)
				require.Equal(t, "recvmsg", o.Reads[3].Err.Syscall)
				for _, w := range o.Writes {
					require.Equal(t, "ECONNREFUSED", w.Err.Errno, "%+v", w)
				}
				require.Equal(t, "write", o.Writes[0].Err.Syscall)
				require.Equal(t, "sendmsg", o.Writes[1].Err.Syscall)
				require.True(t, o.Unconnected.Err.Deadline, "an unconnected socket ignores ICMP errors")
			})
		})
	}
}

// The write methods' argument errors on an unconnected socket: nil and
// wrongly typed addresses, the zero AddrPort, the wrong family, port 0,
// and an oversized datagram (EMSGSIZE).
func TestUDPParityWriteToBadAddr(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, tc := range []struct{ network, address string }{
		{"udp4", "127.0.0.1:0"},
		{"udp6", "[::1]:0"},
		{"udp", ":0"}, // dual stack
	} {
		t.Run(tc.network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, tc.network)
			sockParity(t, func(t *testing.T, s0 sockStack) []udpWriteObs {
				s := udpStackOf(s0)
				pc := udpListen(t, s, tc.network, tc.address)
				peer4 := udpListen(t, s, "udp4", "127.0.0.1:0")
				names := udpNames(pc, "<P>", peer4, "<peer4>")
				port := peer4.LocalAddr().(*net.UDPAddr).Port
				var o []udpWriteObs
				add := func(kind string, n int, err error) {
					o = append(o, udpWriteObs{Kind: kind, N: n, Err: udpObserve(err, names)})
				}
				b := []byte("payload")
				n, err := pc.WriteToUDP(b, nil)
				add("WriteToUDP(nil)", n, err)
				n, err = pc.WriteTo(b, (*net.UDPAddr)(nil))
				add("WriteTo(typed nil)", n, err)
				n, err = pc.WriteTo(b, nil)
				add("WriteTo(nil)", n, err)
				n, err = pc.WriteTo(b, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
				add("WriteTo(TCPAddr)", n, err)
				n, err = pc.WriteTo(b, &net.UnixAddr{Name: "/nonexistent", Net: "unixgram"})
				add("WriteTo(UnixAddr)", n, err)
				n, err = pc.WriteToUDPAddrPort(b, netip.AddrPort{})
				add("WriteToUDPAddrPort({})", n, err)
				n, _, err = pc.WriteMsgUDP(b, nil, nil)
				add("WriteMsgUDP(nil)", n, err)
				n, _, err = pc.WriteMsgUDPAddrPort(b, nil, netip.AddrPort{})
				add("WriteMsgUDPAddrPort({})", n, err)
				n, _, err = pc.WriteMsgUDP(b, []byte{1, 2, 3}, peer4.LocalAddr().(*net.UDPAddr))
				add("WriteMsgUDP(bad oob)", n, err)
				for _, ap := range []netip.AddrPort{
					netip.MustParseAddrPort("127.0.0.1:" + strconv.Itoa(port)),
					netip.MustParseAddrPort("[::ffff:127.0.0.1]:" + strconv.Itoa(port)),
					netip.MustParseAddrPort("[::1]:" + strconv.Itoa(port)),
					netip.MustParseAddrPort("0.0.0.0:" + strconv.Itoa(port)),
					netip.MustParseAddrPort("127.0.0.1:0"),
				} {
					n, err = pc.WriteToUDPAddrPort(b, ap)
					add("WriteToUDPAddrPort("+names.str(ap.String())+")", n, err)
					n, _, err = pc.WriteMsgUDPAddrPort(b, nil, ap)
					add("WriteMsgUDPAddrPort("+names.str(ap.String())+")", n, err)
					ua := net.UDPAddrFromAddrPort(ap)
					n, err = pc.WriteToUDP(b, ua)
					add("WriteToUDP("+names.str(ua.String())+")", n, err)
				}
				n, err = pc.WriteToUDP(b, &net.UDPAddr{Port: port}) // nil IP
				add("WriteToUDP(nil IP)", n, err)
				n, err = pc.WriteToUDP(b, &net.UDPAddr{IP: net.IPv6loopback, Port: port, Zone: "nosuchzone"})
				add("WriteToUDP(zone)", n, err)
				// Oversized, to the socket itself (its own family).
				self := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: pc.LocalAddr().(*net.UDPAddr).Port}
				if tc.network == "udp6" {
					self.IP = net.IPv6loopback
				}
				big := make([]byte, 70000)
				n, err = pc.WriteTo(big, self)
				add("WriteTo(70000 bytes)", n, err)
				n, _, err = pc.WriteMsgUDPAddrPort(big, nil, self.AddrPort())
				add("WriteMsgUDPAddrPort(70000 bytes)", n, err)
				return o
			}, func(t *testing.T, s sockStack, o []udpWriteObs) {
				for _, w := range o {
					if !w.Err.Nil {
						require.Equal(t, "write", w.Err.Op, "%+v", w)
						require.Equal(t, "*net.OpError", w.Err.Type, "%+v", w)
						require.Contains(t, w.Err.Source, "<P>", "%+v", w)
					}
				}
				require.Contains(t, o[0].Err.Text, "missing address")
				require.Equal(t, "<nil>", o[0].Err.Addr)
				require.Equal(t, "syscall.Errno: invalid argument", o[2].Err.Inner)
				require.Equal(t, "syscall.Errno: invalid argument", o[3].Err.Inner)
				require.Contains(t, o[5].Err.Text, "missing address")
				require.Equal(t, "EMSGSIZE", o[len(o)-2].Err.Errno)
				require.Equal(t, "sendto", o[len(o)-2].Err.Syscall)
				require.Equal(t, "sendmsg", o[len(o)-1].Err.Syscall)
			})
		})
	}
}

// The AddrPort methods round trip, and every method reports addresses as
// net does: a plain IPv4 address on an IPv4 socket, an IPv4-mapped one on
// a dual-stack socket, *UDPAddr IPs of net's lengths.
func TestUDPParityAddrPortRoundTrip(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		In, Out []udpReadObs
		Writes  []udpWriteObs
	}
	for _, tc := range []struct{ name, network, address, peerNetwork string }{
		{"udp4", "udp4", "127.0.0.1:0", "udp4"},
		{"udp6", "udp6", "[::1]:0", "udp6"},
		{"dual-stack-from-v4", "udp", ":0", "udp4"},
		{"dual-stack-from-v6", "udp", ":0", "udp6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			udpSkipUnlessNetwork(t, tc.network)
			udpSkipUnlessNetwork(t, tc.peerNetwork)
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				pc := udpListen(t, s, tc.network, tc.address)
				peer := udpListen(t, s, tc.peerNetwork, udpLoopback(tc.peerNetwork))
				loop := netip.MustParseAddr("127.0.0.1")
				if tc.peerNetwork == "udp6" {
					loop = netip.IPv6Loopback()
				}
				to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(loop, uint16(pc.LocalAddr().(*net.UDPAddr).Port)))
				names := udpNames(pc, "<P>", peer, "<peer>", to, "<P>")
				var o obs
				buf := make([]byte, 64)
				// peer → pc, each write method, read with each read method.
				for i, kind := range udpWriteKinds {
					o.Writes = append(o.Writes, udpWrite(peer, kind, []byte(kind), to, names))
					o.In = append(o.In, udpRead(pc, udpReadKinds[i], buf, names))
				}
				// The sender, as pc sees it, in both forms.
				_, err := peer.WriteTo([]byte("x"), to)
				require.NoError(t, err)
				_, fromAP, err := pc.ReadFromUDPAddrPort(buf)
				require.NoError(t, err)
				_, err = peer.WriteTo([]byte("y"), to)
				require.NoError(t, err)
				_, fromUDP, err := pc.ReadFromUDP(buf)
				require.NoError(t, err)
				require.Equal(t, fromAP, fromUDP.AddrPort())
				// pc → peer, each method, to the address it reported
				// (and its unmapped form); read with each read method.
				for i, kind := range udpWriteKinds {
					if strings.HasSuffix(kind, "AddrPort") {
						for _, ap := range []netip.AddrPort{fromAP, netip.AddrPortFrom(fromAP.Addr().Unmap(), fromAP.Port())} {
							var w udpWriteObs
							if kind == "WriteToUDPAddrPort" {
								w.N, err = pc.WriteToUDPAddrPort([]byte(kind), ap)
							} else {
								w.N, w.OOBN, err = pc.WriteMsgUDPAddrPort([]byte(kind), nil, ap)
							}
							w.Kind, w.Err = kind+"("+names.str(ap.String())+")", udpObserve(err, names)
							o.Writes = append(o.Writes, w)
							o.Out = append(o.Out, udpRead(peer, udpReadKinds[i], buf, names))
						}
						continue
					}
					o.Writes = append(o.Writes, udpWrite(pc, kind, []byte(kind), fromUDP, names))
					o.Out = append(o.Out, udpRead(peer, udpReadKinds[i], buf, names))
				}
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				for _, w := range o.Writes {
					require.True(t, w.Err.Nil, "%+v", w)
				}
				for _, r := range append(o.In, o.Out...) {
					require.True(t, r.Err.Nil, "%+v", r)
					require.True(t, strings.HasPrefix(r.Data, "Write"), "%+v", r)
				}
				for _, r := range o.Out {
					require.Contains(t, r.Addr, "<P>", "%+v", r)
				}
				switch tc.name {
				case "udp4":
					require.Contains(t, o.In[2].Addr, "AddrPort <peer> valid=true is4=true")
				case "dual-stack-from-v4":
					require.Contains(t, o.In[2].Addr, "is4in6=true")
				}
			})
		})
	}
}

// Ancillary data on UDP: with IP_PKTINFO / IPV6_RECVPKTINFO on, ReadMsgUDP
// returns the control message, reports MSG_CTRUNC when oob is too small
// (issue 5's bad input), and WriteMsgUDP sends a datagram with a
// PKTINFO control message.
func TestUDPParityOOB(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Reads  []udpReadObs
		Cmsgs  []string // level/type/data length of each control message, per read
		Writes []udpWriteObs
	}
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				pc := udpListen(t, s, network, udpLoopback(network))
				peer := udpListen(t, s, network, udpLoopback(network))
				names := udpNames(pc, "<P>", peer, "<peer>")
				level, opt := unix.IPPROTO_IP, unix.IP_PKTINFO
				pktinfo := unix.PktInfo4(&unix.Inet4Pktinfo{Spec_dst: [4]byte{127, 0, 0, 1}})
				if network == "udp6" {
					level, opt = unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO
					pktinfo = unix.PktInfo6(&unix.Inet6Pktinfo{Addr: [16]byte(net.IPv6loopback)})
				}
				sockRawFD(t, pc, func(fd int) { require.NoError(t, unix.SetsockoptInt(fd, level, opt, 1)) })
				var o obs
				for _, oobLen := range []int{0, 4, 1024} {
					n, oobn, err := peer.WriteMsgUDP([]byte("with oob"), pktinfo, pc.LocalAddr().(*net.UDPAddr))
					o.Writes = append(o.Writes, udpWriteObs{Kind: "WriteMsgUDP(pktinfo)", N: n, OOBN: oobn, Err: udpObserve(err, names)})
					buf, oob := make([]byte, 16), make([]byte, oobLen)
					var r udpReadObs
					var a *net.UDPAddr
					r.Kind = "ReadMsgUDP"
					r.N, r.OOBN, r.Flags, a, err = pc.ReadMsgUDP(buf, oob)
					r.Addr, r.Err, r.Data = udpAddr(names, a), udpObserve(err, names), string(buf[:max(r.N, 0)])
					o.Reads = append(o.Reads, r)
					var desc []string
					msgs, perr := unix.ParseSocketControlMessage(oob[:r.OOBN])
					require.NoError(t, perr)
					for _, m := range msgs {
						desc = append(desc, strconv.Itoa(int(m.Header.Level))+"/"+strconv.Itoa(int(m.Header.Type))+"/"+strconv.Itoa(len(m.Data)))
					}
					o.Cmsgs = append(o.Cmsgs, strings.Join(desc, ","))
				}
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				for _, w := range o.Writes {
					require.True(t, w.Err.Nil, "%+v", w)
				}
				require.NotZero(t, o.Reads[0].Flags&unix.MSG_CTRUNC, "no room for the control message")
				require.NotZero(t, o.Reads[1].Flags&unix.MSG_CTRUNC, "no room for the control message")
				require.Zero(t, o.Reads[2].Flags&unix.MSG_CTRUNC)
				require.NotEmpty(t, o.Cmsgs[2])
				for _, r := range o.Reads {
					require.Equal(t, "with oob", r.Data)
				}
			})
		})
	}
}
