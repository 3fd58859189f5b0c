//go:build linux

package gatenet_test

// Parity: each scenario runs on net and on gatenet (sockParity) and what
// the caller observes must be the same. This file covers errors, Close,
// deadlines, shutdown and addresses; tcpsock_opts_test.go covers
// socket options, File and RawConn.

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// sockPairNames names a pair's addresses for sockObserve: the conn's own
// address is <L>, its peer's <R>.
func sockPairNames(c net.Conn) *sockNames {
	n := &sockNames{}
	n.add(c.LocalAddr(), "<L>")
	n.add(c.RemoteAddr(), "<R>")
	return n
}

// sockClosedPort is a loopback TCP port nobody listens on (a listener's,
// closed).
func sockClosedPort(t *testing.T) string {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestSockParityDialRefused(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	tcpAddr := sockClosedPort(t)
	dir := t.TempDir()
	stale := dir + "/stale" // a socket file nobody listens on
	ln, err := net.Listen("unix", stale)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	for _, tc := range []struct{ name, network, address, errno string }{
		{"tcp", "tcp", tcpAddr, "ECONNREFUSED"},
		{"tcp4", "tcp4", tcpAddr, "ECONNREFUSED"},
		{"unix-stale", "unix", stale, "ECONNREFUSED"},
		{"unix-missing", "unix", dir + "/missing", "ENOENT"},
		{"unixpacket-missing", "unixpacket", dir + "/missing", "ENOENT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) sockErrObs {
				c, err := s.Dial(tc.network, tc.address)
				require.Error(t, err)
				require.Nil(t, c)
				n := &sockNames{}
				n.add(&net.UnixAddr{Name: dir, Net: "unix"}, "<dir>")
				return sockObserve(err, n)
			}, func(t *testing.T, s sockStack, o sockErrObs) {
				require.Equal(t, "dial", o.Op)
				require.Equal(t, tc.network, o.Net)
				require.Equal(t, "<nil>", o.Source)
				require.Equal(t, "connect", o.Syscall)
				require.Equal(t, tc.errno, o.Errno)
				require.Equal(t, "*net.OpError", o.Type)
			})
		})
	}
}

// sockClosedObs is what a closed conn reports to each call.
type sockClosedObs struct {
	Read, ReadNil, Write, Close                    sockErrObs
	SetDeadline, SetReadDeadline, SetWriteDeadline sockErrObs
	SetReadBuffer, SetWriteBuffer                  sockErrObs
	CloseRead, CloseWrite                          sockErrObs
	SetLinger, SetNoDelay, SetKeepAlive            sockErrObs // TCP only
	ReadN                                          int
}

func TestSockParityAfterClose(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockClosedObs {
		c, _, _ := sockPair(t, s, network)
		n := sockPairNames(c)
		require.NoError(t, c.Close())
		var o sockClosedObs
		var err error
		o.ReadN, err = c.Read(make([]byte, 8))
		o.Read = sockObserve(err, n)
		_, err = c.Read(nil)
		o.ReadNil = sockObserve(err, n)
		_, err = c.Write([]byte("x"))
		o.Write = sockObserve(err, n)
		o.Close = sockObserve(c.Close(), n)
		o.SetDeadline = sockObserve(c.SetDeadline(time.Now()), n)
		o.SetReadDeadline = sockObserve(c.SetReadDeadline(time.Now()), n)
		o.SetWriteDeadline = sockObserve(c.SetWriteDeadline(time.Now()), n)
		sc := c.(sockConn)
		o.SetReadBuffer = sockObserve(sc.SetReadBuffer(4096), n)
		o.SetWriteBuffer = sockObserve(sc.SetWriteBuffer(4096), n)
		o.CloseRead = sockObserve(sc.CloseRead(), n)
		o.CloseWrite = sockObserve(sc.CloseWrite(), n)
		if tc, ok := c.(sockTCPConn); ok {
			o.SetLinger = sockObserve(tc.SetLinger(0), n)
			o.SetNoDelay = sockObserve(tc.SetNoDelay(false), n)
			o.SetKeepAlive = sockObserve(tc.SetKeepAlive(false), n)
		}
		return o
	}, func(t *testing.T, s sockStack, network string, o sockClosedObs) {
		for _, e := range []sockErrObs{o.Read, o.ReadNil, o.Write, o.Close, o.SetDeadline, o.SetReadBuffer, o.CloseWrite} {
			require.True(t, e.Closed, "%+v", e)
		}
		require.Equal(t, "read", o.Read.Op)
		require.Equal(t, "close", o.Close.Op)
		if network == "tcp" {
			require.Equal(t, "*net.TCPAddr <L>", o.Read.Source)
		} else {
			require.Equal(t, "*net.UnixAddr @", o.Read.Source) // unnamed
		}
		// SetDeadline after Close: Op "set", Source nil, Addr laddr.
		require.Equal(t, "set", o.SetDeadline.Op)
		require.Equal(t, "<nil>", o.SetDeadline.Source)
		require.Equal(t, o.Read.Source, o.SetDeadline.Addr)
		require.Zero(t, o.ReadN)
	})
}

func TestSockParityAcceptPastDeadline(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	sockParity(t, func(t *testing.T, s sockStack) sockErrObs {
		ln, err := s.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		n := &sockNames{}
		n.add(ln.Addr(), "<L>")
		require.NoError(t, ln.(sockListener).SetDeadline(time.Now().Add(-time.Second)))
		c, err := ln.Accept()
		require.Nil(t, c)
		return sockObserve(err, n)
	}, func(t *testing.T, s sockStack, o sockErrObs) {
		require.Equal(t, "accept", o.Op)
		require.True(t, o.Deadline)
		require.True(t, o.Timeout)
		require.True(t, o.Temporary)
	})
}

// sockDeadlineObs is a Read and zero-length calls against deadlines.
type sockDeadlineObs struct {
	Read                    sockErrObs
	ReadN                   int
	ReadNilN, ReadEmptyN    int
	ReadNil, ReadEmpty      sockErrObs
	WriteNilN               int
	WriteNil                sockErrObs
	BigWrite                sockErrObs
	BigWritePartial         bool // 0 < n < len
	ReadAfterClear, Payload string
}

func TestSockParityDeadlines(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockDeadlineObs {
		c, peer, _ := sockPair(t, s, network)
		n := sockPairNames(c)
		var o sockDeadlineObs
		const d = 20 * time.Millisecond
		start := time.Now()
		require.NoError(t, c.SetReadDeadline(start.Add(d)))
		var err error
		o.ReadN, err = c.Read(make([]byte, 8))
		require.GreaterOrEqual(t, time.Since(start), d, "read timed out early")
		o.Read = sockObserve(err, n)

		// Zero-length Reads skip the deadline; a zero-length Write does not.
		require.NoError(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
		o.ReadNilN, err = c.Read(nil)
		o.ReadNil = sockObserve(err, n)
		o.ReadEmptyN, err = c.Read([]byte{})
		o.ReadEmpty = sockObserve(err, n)
		require.NoError(t, c.SetWriteDeadline(time.Now().Add(-time.Second)))
		o.WriteNilN, err = c.Write(nil)
		o.WriteNil = sockObserve(err, n)

		// A 64 MiB Write to a peer that does not read times out part-way.
		// If the goroutine is descheduled for the whole 100 ms
		// before Write starts (a loaded machine), the deadline has
		// passed and n is 0: try again, a bounded number of times.
		big := make([]byte, 64<<20)
		var nw int
		for try := 0; try < 5 && nw == 0; try++ {
			require.NoError(t, c.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
			nw, err = c.Write(big)
		}
		o.BigWrite = sockObserve(err, n)
		// On a Unix socket the kernel sometimes refuses even the
		// first chunk of so large a write (EAGAIN on an empty
		// socket; seen with net and gatenet alike), so only TCP's
		// partial count is compared.
		o.BigWritePartial = nw > 0 && nw < len(big) || network != "tcp"

		// Clearing the read deadline makes the conn usable again.
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		o.Payload = sendRecv(t, peer, c, "after")
		return o
	}, func(t *testing.T, s sockStack, network string, o sockDeadlineObs) {
		require.Equal(t, "read", o.Read.Op)
		require.True(t, o.Read.Deadline)
		require.True(t, o.Read.NetError, "direct net.Error assertion")
		require.True(t, o.Read.Timeout)
		require.True(t, o.Read.Temporary)
		require.Zero(t, o.ReadN)
		require.True(t, o.ReadNil.Nil)
		require.True(t, o.ReadEmpty.Nil)
		require.Zero(t, o.ReadNilN)
		require.True(t, o.WriteNil.Deadline)
		require.Equal(t, "write", o.WriteNil.Op)
		require.True(t, o.BigWrite.Deadline)
		require.True(t, o.BigWritePartial)
		require.Equal(t, "after", o.Payload)
	})
}

// TestSockParityDeadlineBothWays: after SetDeadline, a Read that timed
// out is followed by a Write that times out too, as net's (one timer for
// equal deadlines). gatenet's Write went through in about 85 of 100
// tries: the write direction's own timer had not run yet.
func TestSockParityDeadlineBothWays(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) (writesThrough int) {
		c, _, _ := sockPair(t, s, network)
		for range 30 {
			require.NoError(t, c.SetDeadline(time.Now().Add(2*time.Millisecond)))
			_, err := c.Read(make([]byte, 8))
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			if _, err := c.Write([]byte("x")); err == nil {
				writesThrough++
			} else {
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			}
		}
		return writesThrough
	}, func(t *testing.T, s sockStack, network string, writesThrough int) {
		require.Zero(t, writesThrough, "writes after a read that timed out")
	})
}

// sockShutdownObs is what CloseWrite and CloseRead do to both ends.
type sockShutdownObs struct {
	PeerRead       sockErrObs // after our CloseWrite
	Reverse        string     // peer → us after our CloseWrite
	WriteAfterCW   sockErrObs
	ReadAfterCR    sockErrObs
	ReadAfterCRN   int
	PeerWriteAfter sockErrObs // the peer writes to our closed read side
}

func TestSockParityShutdown(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockShutdownObs {
		var o sockShutdownObs
		c, peer, _ := sockPair(t, s, network)
		n := sockPairNames(c)
		require.NoError(t, c.(sockConn).CloseWrite())
		_, err := peer.Read(make([]byte, 8))
		o.PeerRead = sockObserve(err, sockPairNames(peer))
		o.Reverse = sendRecv(t, peer, c, "pong")
		_, err = c.Write([]byte("x"))
		o.WriteAfterCW = sockObserve(err, n)

		c2, peer2 := sockConnectSame(t, s, c, peer)
		require.NoError(t, c2.(sockConn).CloseRead())
		o.ReadAfterCRN, err = c2.Read(make([]byte, 8))
		o.ReadAfterCR = sockObserve(err, sockPairNames(c2))
		_, err = peer2.Write([]byte("ignored"))
		o.PeerWriteAfter = sockObserve(err, sockPairNames(peer2))
		return o
	}, func(t *testing.T, s sockStack, network string, o sockShutdownObs) {
		require.True(t, o.PeerRead.EOF, "the peer reads a bare io.EOF")
		require.Equal(t, "pong", o.Reverse)
		require.Equal(t, "EPIPE", o.WriteAfterCW.Errno)
		require.Equal(t, "write", o.WriteAfterCW.Syscall)
		require.True(t, o.ReadAfterCR.EOF)
		require.Zero(t, o.ReadAfterCRN)
	})
}

// sockConnectSame makes another pair like (c, peer) on s.
func sockConnectSame(t *testing.T, s sockStack, c, peer net.Conn) (net.Conn, net.Conn) {
	network := c.LocalAddr().Network()
	ln, err := s.Listen(network, sockAddress(t, network))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return sockConnect(t, s, ln, sockDialOpts{})
}

// sockResetObs is a linger-0 Close seen from the peer.
type sockResetObs struct {
	Read1, Read2   sockErrObs // the peer reads
	Write1, Write2 sockErrObs // the peer writes, on a second pair
}

func TestSockParityReset(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	sockParity(t, func(t *testing.T, s sockStack) sockResetObs {
		var o sockResetObs
		c, peer, _ := sockPair(t, s, "tcp")
		require.NoError(t, c.(sockTCPConn).SetLinger(0))
		require.NoError(t, c.Close())
		n := sockPairNames(peer)
		buf := make([]byte, 8)
		_, err := peer.Read(buf)
		o.Read1 = sockObserve(err, n)
		_, err = peer.Read(buf)
		o.Read2 = sockObserve(err, n)

		c, peer, _ = sockPair(t, s, "tcp")
		require.NoError(t, c.(sockTCPConn).SetLinger(0))
		require.NoError(t, c.Close())
		sockWaitTCPState(t, peer, unix.BPF_TCP_CLOSE) // the reset has arrived
		n = sockPairNames(peer)
		_, err = peer.Write([]byte("x"))
		o.Write1 = sockObserve(err, n)
		_, err = peer.Write([]byte("x"))
		o.Write2 = sockObserve(err, n)
		return o
	}, func(t *testing.T, s sockStack, o sockResetObs) {
		require.Equal(t, "ECONNRESET", o.Read1.Errno)
		require.Equal(t, "read", o.Read1.Syscall)
		require.True(t, o.Read2.EOF, "after the reset is reported, reads see EOF")
		require.Contains(t, []string{"ECONNRESET", "EPIPE"}, o.Write1.Errno)
		require.Equal(t, "EPIPE", o.Write2.Errno)
	})
}

// sockAddrObs describes a listener's and a pair's addresses.
type sockAddrObs struct {
	Listener, Client, ClientPeer, Server, ServerPeer string
	Network                                          []string
	IPLen                                            []int    // len(TCPAddr.IP) of each
	AddrPort                                         []string // TCPAddr.AddrPort() of each
	UnixNames                                        []string // UnixAddr.Name of each
	PeerIsListener, CrossMatch                       bool
}

func TestSockParityAddresses(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, tc := range []struct{ name, network, address string }{
		{"tcp-wildcard", "tcp", ":0"},
		{"tcp4-wildcard", "tcp4", ":0"},
		{"tcp6-wildcard", "tcp6", ":0"},
		{"tcp-127", "tcp", "127.0.0.1:0"},
		{"tcp-::1", "tcp", "[::1]:0"},
		{"unix", "unix", ""},
		{"unixpacket", "unixpacket", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) sockAddrObs {
				address := sockAddressOr(t, tc.network, tc.address)
				ln, err := s.Listen(tc.network, address)
				require.NoError(t, err)
				defer ln.Close()
				names := &sockNames{}
				names.add(&net.UnixAddr{Name: address, Net: "unix"}, "<path>")
				client, server := sockConnect(t, s, ln, sockDialOpts{})
				all := []net.Addr{ln.Addr(), client.LocalAddr(), client.RemoteAddr(), server.LocalAddr(), server.RemoteAddr()}
				o := sockAddrObs{
					Listener: names.addr(all[0]), Client: names.addr(all[1]), ClientPeer: names.addr(all[2]),
					Server: names.addr(all[3]), ServerPeer: names.addr(all[4]),
					PeerIsListener: client.RemoteAddr().String() == ln.Addr().String(),
					CrossMatch:     client.LocalAddr().String() == server.RemoteAddr().String(),
				}
				for _, a := range all {
					o.Network = append(o.Network, a.Network())
					switch a := a.(type) {
					case *net.TCPAddr:
						o.IPLen = append(o.IPLen, len(a.IP))
						o.AddrPort = append(o.AddrPort, names.str(a.AddrPort().String()))
					case *net.UnixAddr:
						o.UnixNames = append(o.UnixNames, names.str(a.Name))
					}
				}
				return o
			}, func(t *testing.T, s sockStack, o sockAddrObs) {
				switch tc.name {
				case "tcp-wildcard", "tcp6-wildcard":
					require.Equal(t, "*net.TCPAddr [::]:<port>", o.Listener)
				case "tcp4-wildcard":
					require.Equal(t, "*net.TCPAddr 0.0.0.0:<port>", o.Listener)
				case "unix", "unixpacket":
					require.Equal(t, "*net.UnixAddr <path>", o.Listener)
					require.Equal(t, []string{"<path>", "@", "<path>", "<path>", "@"}, o.UnixNames,
						"unnamed Unix sockets are named \"@\"")
				}
			})
		})
	}
}

// TestSockParityNilConn: net's *TCPConn and *UnixConn embed their conn by
// value, so a method on a nil pointer panics in net (it does not return
// EINVAL); a zero value (non-nil, no socket) returns a bare EINVAL. A nil
// *TCPListener returns EINVAL from Accept, Close and SetDeadline.
func TestSockParityNilConn(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		NilPanics                               []bool
		ZeroRead, ZeroWrite, ZeroClose, ZeroSet sockErrObs
		ZeroLinger, ZeroCloseWrite              sockErrObs
		ZeroAddrNil                             bool
		NilLnAccept, NilLnClose, NilLnSet       sockErrObs
	}
	panics := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	sockParity(t, func(t *testing.T, s sockStack) obs {
		var nilConn, zero sockTCPConn
		var nilLn sockListener
		if s.isNet() {
			nilConn, zero, nilLn = (*net.TCPConn)(nil), &net.TCPConn{}, (*net.TCPListener)(nil)
		} else {
			nilConn, zero, nilLn = (*gatenet.TCPConn)(nil), &gatenet.TCPConn{}, (*gatenet.TCPListener)(nil)
		}
		var o obs
		for _, f := range []func(){
			func() { nilConn.Read(nil) }, func() { nilConn.Close() }, func() { nilConn.SetDeadline(time.Time{}) },
			func() { nilConn.CloseWrite() }, func() { nilConn.SetLinger(0) }, func() { nilConn.LocalAddr() },
		} {
			o.NilPanics = append(o.NilPanics, panics(f))
		}
		_, err := zero.Read(make([]byte, 1))
		o.ZeroRead = sockObserve(err, nil)
		_, err = zero.Write([]byte("x"))
		o.ZeroWrite = sockObserve(err, nil)
		o.ZeroClose = sockObserve(zero.Close(), nil)
		o.ZeroSet = sockObserve(zero.SetDeadline(time.Now()), nil)
		o.ZeroLinger = sockObserve(zero.SetLinger(1), nil)
		o.ZeroCloseWrite = sockObserve(zero.CloseWrite(), nil)
		o.ZeroAddrNil = zero.LocalAddr() == nil && zero.RemoteAddr() == nil
		_, err = nilLn.Accept()
		o.NilLnAccept = sockObserve(err, nil)
		o.NilLnClose = sockObserve(nilLn.Close(), nil)
		o.NilLnSet = sockObserve(nilLn.SetDeadline(time.Now()), nil)
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, []bool{true, true, true, true, true, true}, o.NilPanics)
		require.True(t, o.ZeroRead.EINVALBare)
		require.True(t, o.ZeroClose.EINVALBare)
		require.True(t, o.NilLnAccept.EINVALBare)
		require.True(t, o.ZeroAddrNil)
	})
}
