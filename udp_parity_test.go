//go:build linux

package gatenet_test

// Parity for datagram sockets (UDP and unixgram): each scenario runs on
// net and on gatenet through sockParity (sock_helpers_test.go), and what
// the caller observes must be the same, field by field. The expectations
// are checked against net too. Rows are those of the conformance
// checklist in stdlib-behaviour.md §11.

import (
	"context"
	"net"
	"net/netip"
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

// udpDgramPair is an unconnected socket pc, a connected socket c whose
// peer is pc, and the address of a third, named socket to write to.
func udpDgramPair(t *testing.T, s udpStack, network string) (pc, c net.Conn, to net.Addr, names *sockNames) {
	if network == "unixgram" {
		dir := t.TempDir()
		pc = udpListenUnixgram(t, s, dir+"/p")
		other := udpListenUnixgram(t, s, dir+"/o")
		var err error
		c, err = s.Dial("unixgram", pc.LocalAddr().String())
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return pc, c, other.LocalAddr(), udpNames(dir, "<dir>")
	}
	pc = udpListen(t, s, network, udpLoopback(network))
	c = udpDial(t, s, network, pc.LocalAddr().String())
	return pc, c, c.LocalAddr(), udpNames(pc, "<P>", c, "<C>")
}

func udpKindsFor(network string) (reads, writes []string) {
	if network == "unixgram" {
		return unixReadKinds, unixWriteKinds
	}
	return udpReadKinds, udpWriteKinds
}

// Read and write deadlines on datagram sockets: the timeout's shape for
// every method (row 12), Read(nil) ignoring an expired deadline while
// ReadFrom(nil) does not (rows 6, 11), a past deadline waking a blocked
// read (row 13), sticky expiry with data queued (row 16), a zero-length
// connected Write checking the deadline (row 8), and clearing.
func TestUDPParityDeadlines(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		PastReads              []udpReadObs
		ReadNil, ReadFromNil   udpReadObs
		ConnRead               udpReadObs
		Blocked, Woken, Sticky udpReadObs
		AfterClear             udpReadObs
		PastWrites             []udpWriteObs
		WriteNil               udpWriteObs
		AfterWriteClear        udpWriteObs
	}
	for _, network := range []string{"udp4", "udp6", "unixgram"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				pc, c, to, names := udpDgramPair(t, s, network)
				readKinds, writeKinds := udpKindsFor(network)
				buf := make([]byte, 16)
				var o obs
				past := time.Now().Add(-time.Second)
				require.NoError(t, pc.SetReadDeadline(past))
				for _, kind := range readKinds {
					o.PastReads = append(o.PastReads, udpRead(pc, kind, buf, names))
				}
				o.ReadNil = udpRead(pc, "Read", nil, names)
				o.ReadFromNil = udpRead(pc, "ReadFrom", nil, names)
				require.NoError(t, c.SetReadDeadline(past))
				o.ConnRead = udpRead(c, "Read", buf, names)

				// A deadline ahead: the read blocks until it passes.
				const d = 30 * time.Millisecond
				start := time.Now()
				require.NoError(t, pc.SetReadDeadline(start.Add(d)))
				o.Blocked = udpRead(pc, "ReadFrom", buf, names)
				require.GreaterOrEqual(t, time.Since(start), d, "timed out early")

				// A blocked read, woken by a deadline moved into the past.
				require.NoError(t, pc.SetReadDeadline(time.Time{}))
				r := udpGoRead(pc, readKinds[1], buf, names)
				r.stillBlocked(t, 20*time.Millisecond)
				require.NoError(t, pc.SetReadDeadline(past))
				o.Woken = r.wait(t)

				// Expiry is sticky even with a datagram queued; clearing
				// the deadline lets it be read.
				_, err := c.Write([]byte("queued"))
				require.NoError(t, err)
				o.Sticky = udpRead(pc, "ReadFrom", make([]byte, 16), names)
				require.NoError(t, pc.SetReadDeadline(time.Time{}))
				o.AfterClear = udpRead(pc, "ReadFrom", make([]byte, 16), names)

				// Write deadlines: checked before anything is sent.
				require.NoError(t, pc.SetWriteDeadline(past))
				for _, kind := range writeKinds {
					o.PastWrites = append(o.PastWrites, udpWrite(pc, kind, []byte("late"), to, names))
				}
				require.NoError(t, c.SetWriteDeadline(past))
				o.WriteNil = udpWrite(c, "Write", nil, nil, names)
				require.NoError(t, pc.SetDeadline(time.Time{}))
				o.AfterWriteClear = udpWrite(pc, "WriteTo", []byte("ok"), to, names)
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				timeouts := append([]udpReadObs{o.ReadFromNil, o.ConnRead, o.Blocked, o.Woken, o.Sticky}, o.PastReads...)
				for _, r := range timeouts {
					require.True(t, r.Err.Deadline, "%+v", r)
					require.True(t, r.Err.NetError, "%+v", r)
					require.True(t, r.Err.Timeout && r.Err.Temporary, "%+v", r)
					require.Equal(t, "read", r.Err.Op)
					require.Contains(t, r.Err.Text, "i/o timeout")
				}
				require.True(t, o.ReadNil.Err.Nil, "Read(nil) returns at once, deadline or not")
				require.Equal(t, "queued", o.AfterClear.Data)
				for _, w := range append(o.PastWrites, o.WriteNil) {
					require.True(t, w.Err.Deadline, "%+v", w)
					require.Equal(t, "write", w.Err.Op)
					require.Zero(t, w.N)
				}
				require.True(t, o.AfterWriteClear.Err.Nil)
			})
		})
	}
}

// Row 3 for datagram sockets: Close unblocks a blocked read, whichever
// method, with net.ErrClosed; and what every call returns afterwards
// (rows 2, 7, 21, 51).
func TestUDPParityClose(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Unblocked                         []udpReadObs
		Reads                             []udpReadObs
		Writes                            []udpWriteObs
		Close, SetDeadline, SetReadBuffer sockErrObs
		File, Control                     sockErrObs
		SyscallConn                       bool // SyscallConn itself succeeds
	}
	for _, network := range []string{"udp4", "udp6", "unixgram"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				readKinds, writeKinds := udpKindsFor(network)
				var o obs
				var pc net.Conn
				var to net.Addr
				var names *sockNames
				for _, kind := range readKinds {
					pc, _, to, names = udpDgramPair(t, s, network)
					r := udpGoRead(pc, kind, make([]byte, 16), names)
					r.stillBlocked(t, 20*time.Millisecond)
					require.NoError(t, pc.Close())
					o.Unblocked = append(o.Unblocked, r.wait(t))
				}
				for _, kind := range readKinds {
					o.Reads = append(o.Reads, udpRead(pc, kind, make([]byte, 16), names))
				}
				o.Reads = append(o.Reads, udpRead(pc, "Read", nil, names))
				o.Reads = append(o.Reads, udpRead(pc, "ReadFrom", nil, names))
				for _, kind := range append([]string{"Write"}, writeKinds...) {
					o.Writes = append(o.Writes, udpWrite(pc, kind, []byte("x"), to, names))
				}
				o.Close = udpObserve(pc.Close(), names)
				o.SetDeadline = udpObserve(pc.SetDeadline(time.Now()), names)
				if b, ok := pc.(interface{ SetReadBuffer(int) error }); ok {
					o.SetReadBuffer = udpObserve(b.SetReadBuffer(4096), names)
				}
				f, err := pc.(interface{ File() (*os.File, error) }).File()
				if f != nil {
					f.Close()
				}
				o.File = udpObserve(err, names)
				rc, err := pc.(syscall.Conn).SyscallConn()
				o.SyscallConn = err == nil && rc != nil
				if rc != nil {
					o.Control = udpObserve(rc.Control(func(uintptr) {}), names)
				}
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				for _, r := range o.Unblocked {
					require.True(t, r.Err.Closed, "%+v", r)
					require.Equal(t, "read", r.Err.Op)
					require.Contains(t, r.Err.Text, "use of closed network connection")
					require.False(t, r.Err.Timeout)
				}
				for _, r := range o.Reads {
					require.True(t, r.Err.Closed, "%+v", r)
				}
				for _, w := range o.Writes {
					require.True(t, w.Err.Closed, "%+v", w)
					require.Equal(t, "write", w.Err.Op)
				}
				require.True(t, o.Close.Closed)
				require.Equal(t, "close", o.Close.Op)
				require.Equal(t, "set", o.SetDeadline.Op)
				require.Equal(t, "<nil>", o.SetDeadline.Source)
				require.True(t, o.SyscallConn)
				require.Equal(t, "raw-control", o.Control.Op)
				require.True(t, o.Control.Closed)
			})
		})
	}
}

// udpResultObs is the outcome of making a socket: the error, or the
// socket's description.
type udpResultObs struct {
	Err  sockErrObs
	Sock udpSockObs
}

// Unknown networks and bad addresses, for each constructor, against net.
func TestUDPParityErrors(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	dir := t.TempDir()
	busy := dir + "/busy"
	bl, err := net.ListenPacket("unixgram", busy)
	require.NoError(t, err)
	defer bl.Close()
	inUse, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer inUse.Close()
	inUseAddr := inUse.LocalAddr().(*net.UDPAddr)
	long := dir + "/" + strings.Repeat("x", 120)
	udp4 := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	udp6 := &net.UDPAddr{IP: net.IPv6loopback, Port: 9}
	type call func(s udpStack) (net.Conn, error)
	listen := func(network, address string) call {
		return func(s udpStack) (net.Conn, error) {
			pc, err := s.ListenPacket(network, address)
			if pc == nil {
				return nil, err
			}
			return pc.(net.Conn), err
		}
	}
	dial := func(network, address string) call {
		return func(s udpStack) (net.Conn, error) { return s.Dial(network, address) }
	}
	listenUDP := func(network string, laddr *net.UDPAddr) call {
		return func(s udpStack) (net.Conn, error) {
			c, err := s.ListenUDP(network, laddr)
			if c == nil {
				return nil, err
			}
			return c, err
		}
	}
	dialUDP := func(network string, laddr, raddr *net.UDPAddr) call {
		return func(s udpStack) (net.Conn, error) {
			c, err := s.DialUDP(network, laddr, raddr)
			if c == nil {
				return nil, err
			}
			return c, err
		}
	}
	// "<run>" in a name is a directory of the run's own: a socket file
	// created by net's run must not be in gatenet's way.
	var run string
	listenUnixgram := func(network string, laddr *net.UnixAddr) call {
		return func(s udpStack) (net.Conn, error) {
			a := laddr
			if a != nil {
				a = &net.UnixAddr{Name: strings.ReplaceAll(a.Name, "<run>", run), Net: a.Net}
			}
			c, err := s.ListenUnixgram(network, a)
			if c == nil {
				return nil, err
			}
			return c, err
		}
	}
	for _, tc := range []struct {
		name string
		call call
	}{
		{"ListenPacket/foo", listen("foo", ":0")},
		{"ListenPacket/empty-network", listen("", ":0")},
		{"ListenPacket/tcp", listen("tcp", "127.0.0.1:0")},
		{"ListenPacket/tcp6", listen("tcp6", "[::1]:0")},
		{"ListenPacket/udp/bad-port", listen("udp", "127.0.0.1:99999")},
		{"ListenPacket/udp/named-port", listen("udp", "127.0.0.1:http2x")},
		{"ListenPacket/udp/missing-port", listen("udp", "127.0.0.1")},
		{"ListenPacket/udp/bracket", listen("udp", "[::1")},
		{"ListenPacket/udp/empty", listen("udp", "")},
		{"ListenPacket/udp4/v6", listen("udp4", "[::1]:0")},
		{"ListenPacket/udp6/v4", listen("udp6", "127.0.0.1:0")},
		{"ListenPacket/udp/in-use", listen("udp", inUseAddr.String())},
		{"ListenPacket/udp4/in-use", listen("udp4", inUseAddr.String())},
		{"ListenPacket/udp/zone", listen("udp", "[::1%nosuchzone]:0")},
		{"ListenPacket/unixgram/busy", listen("unixgram", busy)},
		{"ListenPacket/unixgram/no-dir", listen("unixgram", dir+"/no/such/dir/s")},
		{"ListenPacket/unixgram/too-long", listen("unixgram", long)},
		{"Dial/udp/empty", dial("udp", "")},
		{"Dial/udp/missing-port", dial("udp", "127.0.0.1")},
		{"Dial/udp4/v6", dial("udp4", "[::1]:9")},
		{"Dial/udp6/v4", dial("udp6", "127.0.0.1:9")},
		{"Dial/udp/port-0", dial("udp", "127.0.0.1:0")},
		{"Dial/unixgram/missing", dial("unixgram", dir+"/missing")},
		{"Dial/unixgram/empty", dial("unixgram", "")},
		{"Dial/unixgram/not-a-socket", dial("unixgram", dir)},
		{"ListenUDP/tcp", listenUDP("tcp", nil)},
		{"ListenUDP/tcp/addr", listenUDP("tcp", udp4)},
		{"ListenUDP/udp4/v6", listenUDP("udp4", &net.UDPAddr{IP: net.IPv6loopback})},
		{"ListenUDP/udp6/v4", listenUDP("udp6", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})},
		{"ListenUDP/in-use", listenUDP("udp", inUseAddr)},
		{"ListenUDP/nil", listenUDP("udp4", nil)},
		{"DialUDP/tcp", dialUDP("tcp", nil, udp4)},
		{"DialUDP/nil-raddr", dialUDP("udp", udp4, nil)},
		{"DialUDP/udp4/v6", dialUDP("udp4", nil, udp6)},
		{"DialUDP/udp6/v4", dialUDP("udp6", nil, udp4)},
		{"DialUDP/mixed", dialUDP("udp", &net.UDPAddr{IP: net.IPv6loopback}, udp4)},
		{"DialUDP/laddr-in-use", dialUDP("udp4", inUseAddr, udp4)},
		{"ListenUnixgram/unix", listenUnixgram("unix", &net.UnixAddr{Name: "<run>/u", Net: "unix"})},
		{"ListenUnixgram/nil", listenUnixgram("unixgram", nil)},
		{"ListenUnixgram/busy", listenUnixgram("unixgram", &net.UnixAddr{Name: busy, Net: "unixgram"})},
		{"ListenUnixgram/net-mismatch", listenUnixgram("unixgram", &net.UnixAddr{Name: "<run>/mismatch", Net: "unix"})},
		{"ListenUnixgram/empty-name", listenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "6") || strings.Contains(tc.name, "v6") || strings.Contains(tc.name, "zone") {
				udpSkipUnlessNetwork(t, "udp6")
			}
			sockParity(t, func(t *testing.T, s0 sockStack) udpResultObs {
				s := udpStackOf(s0)
				run = t.TempDir()
				names := udpNames(dir, "<dir>", run, "<run>")
				c, err := tc.call(s)
				o := udpResultObs{Err: udpObserve(err, names)}
				if c != nil {
					o.Sock = udpDescribe(t, c, names)
					c.Close()
				}
				return o
			}, nil)
		})
	}
}

// net.ListenPacket("unix") and ("unixpacket") succeed, oddly: they return
// a *UnixConn on a listening stream (or seqpacket) socket, whose reads
// fail and whose Close leaves the socket file behind.
func TestUDPParityListenPacketStream(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Result   udpResultObs
		Read     udpReadObs
		Accepted bool // a client can connect
		FileLeft bool
	}
	for _, network := range []string{"unix", "unixpacket"} {
		t.Run(network, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				path := t.TempDir() + "/s"
				names := udpNames(path, "<path>")
				pc, err := s.ListenPacket(network, path)
				o := obs{Result: udpResultObs{Err: udpObserve(err, names)}}
				if pc == nil {
					return o
				}
				o.Result.Sock = udpDescribe(t, pc.(net.Conn), names)
				require.NoError(t, pc.SetReadDeadline(time.Now().Add(time.Minute))) // a safety net
				o.Read = udpRead(pc.(net.Conn), "ReadFrom", make([]byte, 8), names)
				if c, err := net.Dial(network, path); err == nil {
					o.Accepted = true
					c.Close()
				}
				require.NoError(t, pc.Close())
				_, err = os.Stat(path)
				o.FileLeft = err == nil
				return o
			}, nil)
		})
	}
}

// Unix datagram sockets both ways: ListenUnixgram and
// ListenPacket("unixgram") exchanging with every method; an unnamed
// sender reads as a nil address (an untyped nil from ReadFrom); an
// autobound one by its abstract name, which can be answered; an empty
// datagram is (0, nil), never EOF; and the address errors.
func TestUDPParityUnixgram(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Addrs               []string
		Writes              []udpWriteObs
		Reads               []udpReadObs
		ReadFromNilIsNil    bool // ReadFrom's Addr is an untyped nil for an unnamed sender
		Errors              []udpWriteObs
		ReadMsgFlagsCloexec bool
	}
	sockParity(t, func(t *testing.T, s0 sockStack) obs {
		s := udpStackOf(s0)
		dir := t.TempDir()
		a, err := s.ListenUnixgram("unixgram", &net.UnixAddr{Name: dir + "/a", Net: "unixgram"})
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		b := udpListenUnixgram(t, s, dir+"/b")
		auto := udpListenUnixgram(t, s, "") // autobound: "@" and 5 hex digits
		abstract := udpListenUnixgram(t, s, "@"+strings.ReplaceAll(dir, "/", "-")+"-abs")
		unnamed, err := s.Dial("unixgram", dir+"/a")
		require.NoError(t, err)
		t.Cleanup(func() { unnamed.Close() })
		names := udpNames(dir, "<dir>", abstract, "<abs>")
		var o obs
		for _, c := range []net.Conn{a, b, auto, abstract, unnamed} {
			o.Addrs = append(o.Addrs, udpAddr(names, c.LocalAddr())+" / "+udpAddr(names, c.RemoteAddr()))
		}
		buf := make([]byte, 64)
		// a → b and b → a, every write method, every read method.
		for i, kind := range unixWriteKinds {
			o.Writes = append(o.Writes, udpWrite(a, kind, []byte("a→b "+kind), b.LocalAddr(), names))
			o.Reads = append(o.Reads, udpRead(b, unixReadKinds[i], buf, names))
			o.Writes = append(o.Writes, udpWrite(b, kind, []byte("b→a "+kind), a.LocalAddr(), names))
			o.Reads = append(o.Reads, udpRead(a, unixReadKinds[i], buf, names))
		}
		// Unnamed sender: no address, whatever the method.
		for _, kind := range unixReadKinds {
			_, err := unnamed.Write([]byte("anon"))
			require.NoError(t, err)
			o.Reads = append(o.Reads, udpRead(a, kind, buf, names))
		}
		_, err = unnamed.Write([]byte("anon"))
		require.NoError(t, err)
		_, from, err := a.ReadFrom(buf)
		require.NoError(t, err)
		o.ReadFromNilIsNil = from == nil
		// Empty datagrams, connected and not.
		_, err = unnamed.Write(nil)
		require.NoError(t, err)
		o.Reads = append(o.Reads, udpRead(a, "ReadFromUnix", buf, names))
		o.Writes = append(o.Writes, udpWrite(b, "WriteToUnix", nil, a.LocalAddr(), names))
		o.Reads = append(o.Reads, udpRead(a, "Read", buf, names))
		// Autobound and abstract senders can be answered.
		for _, c := range []unixDgramConn{auto, abstract} {
			_, err = c.WriteTo([]byte("named?"), a.LocalAddr())
			require.NoError(t, err)
			var r udpReadObs
			r, from = udpReadFromUnix(a, buf, names)
			o.Reads = append(o.Reads, r)
			o.Writes = append(o.Writes, udpWrite(a, "WriteTo", []byte("reply"), from, names))
			o.Reads = append(o.Reads, udpRead(c, "ReadFrom", buf, names))
		}
		// ReadMsgUnix passes MSG_CMSG_CLOEXEC, which shows in the flags.
		_, err = b.WriteTo([]byte("msg"), a.LocalAddr())
		require.NoError(t, err)
		r := udpRead(a, "ReadMsgUnix", buf, names)
		o.Reads = append(o.Reads, r)
		o.ReadMsgFlagsCloexec = r.Flags&unix.MSG_CMSG_CLOEXEC != 0
		// Errors.
		missing := &net.UnixAddr{Name: dir + "/missing", Net: "unixgram"}
		for _, to := range []net.Addr{
			nil, (*net.UnixAddr)(nil), missing,
			&net.UnixAddr{Name: dir + "/b", Net: "unix"},       // EAFNOSUPPORT
			&net.UnixAddr{Name: dir + "/b", Net: "unixpacket"}, // EAFNOSUPPORT
			&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9},  // EINVAL
			&net.UnixAddr{Name: dir, Net: "unixgram"},          // a directory
		} {
			for _, kind := range unixWriteKinds {
				o.Errors = append(o.Errors, udpWrite(a, kind, []byte("x"), to, names))
			}
		}
		o.Errors = append(o.Errors, udpWrite(unnamed, "Write", make([]byte, 1<<20), nil, names)) // EMSGSIZE
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, []string{
			"*net.UnixAddr <dir>/a / <nil>", "*net.UnixAddr <dir>/b / <nil>", "*net.UnixAddr @<auto> / <nil>",
			"*net.UnixAddr <abs> / <nil>", "*net.UnixAddr @ / *net.UnixAddr <dir>/a",
		}, o.Addrs)
		for _, w := range o.Writes {
			require.True(t, w.Err.Nil, "%+v", w)
		}
		for _, r := range o.Reads {
			require.True(t, r.Err.Nil, "%+v", r)
		}
		for _, r := range o.Reads[6:10] {
			require.Equal(t, "anon", r.Data)
			require.Contains(t, []string{"", "<nil>", "*net.UnixAddr <nil>"}, r.Addr, "an unnamed sender has no address")
		}
		require.True(t, o.ReadFromNilIsNil)
		require.Zero(t, o.Reads[10].N)
		require.Zero(t, o.Reads[11].N)
		require.True(t, o.ReadMsgFlagsCloexec)
		for _, w := range o.Errors {
			require.False(t, w.Err.Nil, "%+v", w)
			require.Equal(t, "write", w.Err.Op)
		}
	})
}

// udpReadFromUnix is ReadFromUnix observed, also returning the address.
func udpReadFromUnix(c unixDgramConn, buf []byte, names *sockNames) (udpReadObs, net.Addr) {
	n, a, err := c.ReadFromUnix(buf)
	o := udpReadObs{Kind: "ReadFromUnix", N: n, Addr: udpAddr(names, a), Err: udpObserve(err, names)}
	if n >= 0 && n <= len(buf) {
		o.Data = string(buf[:n])
	}
	if a == nil {
		return o, nil
	}
	return o, a
}

// Row 46: on a stream or seqpacket UnixConn, ReadFromUnix, ReadFrom and
// ReadMsgUnix at end of stream return an *OpError wrapping io.EOF, where
// Read returns io.EOF itself.
func TestUDPParityUnixReadFromEOF(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, network := range []string{"unix", "unixpacket"} {
		t.Run(network, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) []udpReadObs {
				c, peer, ln := sockPair(t, s, network)
				names := udpNames(ln.Addr(), "<L>")
				_, err := peer.Write([]byte("last"))
				require.NoError(t, err)
				require.NoError(t, peer.Close())
				var o []udpReadObs
				o = append(o, udpRead(c, "ReadFromUnix", make([]byte, 16), names))
				for _, kind := range append(unixReadKinds, "ReadFromUnix") {
					o = append(o, udpRead(c, kind, make([]byte, 16), names))
				}
				return o
			}, func(t *testing.T, s sockStack, o []udpReadObs) {
				require.Equal(t, "last", o[0].Data)
				require.True(t, o[0].Err.Nil)
				for _, r := range o[1:] {
					require.Zero(t, r.N)
					require.True(t, r.Err.EOFIs, "%+v", r)
					if r.Kind == "Read" {
						require.True(t, r.Err.EOF, "Read: a bare io.EOF")
					} else {
						require.False(t, r.Err.EOF, "%s: not a bare io.EOF", r.Kind)
						require.Equal(t, "*net.OpError", r.Err.Type)
						require.Equal(t, "read", r.Err.Op)
					}
				}
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
