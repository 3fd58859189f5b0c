//go:build linux

package gatenet_test

// Parity of datagram sockets' deadlines, Close and error shapes: the
// same scenario on net and on gatenet (sockParity, helpers_sock_test.go),
// compared field by field.

import (
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/internal/testutil"
)

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
