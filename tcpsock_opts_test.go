//go:build linux

package gatenet_test

// Parity of socket options, File() and RawConn between net and gatenet.

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// sockFlagsObs is O_NONBLOCK/FD_CLOEXEC/TCP_NODELAY of both ends.
type sockFlagsObs struct {
	ClientNonblock, ClientCloexec, ServerNonblock, ServerCloexec bool
	ClientNoDelay, ServerNoDelay                                 int
}

func TestSockParityFlags(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockFlagsObs {
		c, srv, _ := sockPair(t, s, network)
		var o sockFlagsObs
		o.ClientNonblock, o.ClientCloexec = sockFlags(t, c)
		o.ServerNonblock, o.ServerCloexec = sockFlags(t, srv)
		if network == "tcp" {
			o.ClientNoDelay = sockOpt(t, c, unix.IPPROTO_TCP, unix.TCP_NODELAY)
			o.ServerNoDelay = sockOpt(t, srv, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		}
		return o
	}, func(t *testing.T, s sockStack, network string, o sockFlagsObs) {
		require.True(t, o.ClientNonblock && o.ClientCloexec && o.ServerNonblock && o.ServerCloexec)
		if network == "tcp" {
			require.Equal(t, 1, o.ClientNoDelay)
			require.Equal(t, 1, o.ServerNoDelay)
		}
	})
}

// sockKeepAlive is SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT.
type sockKeepAlive [4]int

func sockKeepAliveOf(t testing.TB, c any) sockKeepAlive {
	return sockKeepAlive{
		sockOpt(t, c, unix.SOL_SOCKET, unix.SO_KEEPALIVE),
		sockOpt(t, c, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE),
		sockOpt(t, c, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL),
		sockOpt(t, c, unix.IPPROTO_TCP, unix.TCP_KEEPCNT),
	}
}

func TestSockParityKeepAlive(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Client, Server sockKeepAlive
		Period         sockKeepAlive // after SetKeepAlivePeriod(1500ms)
		PeriodErr      sockErrObs
		Negative       sockKeepAlive // after SetKeepAlivePeriod(-1s)
		NegativeErr    sockErrObs
	}
	// The kernel's own defaults (keep-alive off, 7200/75/9) are what a
	// KeepAlive:-1 socket keeps; read them from a fresh socket.
	fresh, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	var kernel sockKeepAlive
	for i, opt := range [][2]int{{unix.SOL_SOCKET, unix.SO_KEEPALIVE}, {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE}, {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL}, {unix.IPPROTO_TCP, unix.TCP_KEEPCNT}} {
		kernel[i], err = unix.GetsockoptInt(fresh, opt[0], opt[1])
		require.NoError(t, err)
	}
	unix.Close(fresh)

	for _, tc := range []struct {
		name           string
		dial, listen   time.Duration
		client, server sockKeepAlive
	}{
		{"default", 0, 0, sockKeepAlive{1, 15, 15, 9}, sockKeepAlive{1, 15, 15, 9}},
		{"off", -1, -1, kernel, kernel},
		{"30s", 30 * time.Second, 30 * time.Second, sockKeepAlive{1, 30, 15, 9}, sockKeepAlive{1, 30, 15, 9}},
		{"1500ms", 1500 * time.Millisecond, 0, sockKeepAlive{1, 2, 15, 9}, sockKeepAlive{1, 15, 15, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) obs {
				ln, err := s.ListenWith(sockListenOpts{KeepAlive: tc.listen}, "tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer ln.Close()
				c, srv := sockConnect(t, s, ln, sockDialOpts{KeepAlive: tc.dial})
				o := obs{Client: sockKeepAliveOf(t, c), Server: sockKeepAliveOf(t, srv)}
				// SetKeepAlivePeriod sets TCP_KEEPIDLE only, rounded up.
				o.PeriodErr = sockObserve(c.(sockTCPConn).SetKeepAlivePeriod(1500*time.Millisecond), nil)
				o.Period = sockKeepAliveOf(t, c)
				o.NegativeErr = sockObserve(c.(sockTCPConn).SetKeepAlivePeriod(-time.Second), nil)
				o.Negative = sockKeepAliveOf(t, c)
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				require.Equal(t, tc.client, o.Client, "dialed side")
				require.Equal(t, tc.server, o.Server, "accepted side")
				want := o.Client
				want[1] = 2
				require.Equal(t, want, o.Period)
				require.Equal(t, want, o.Negative, "a negative period leaves the option alone")
			})
		})
	}
}

func TestSockParityLinger(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct{ Default, Minus1, Five, Zero [2]int32 }
	linger := func(t *testing.T, c any) [2]int32 {
		var l *unix.Linger
		var err error
		sockRawFD(t, c, func(fd int) { l, err = unix.GetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER) })
		require.NoError(t, err)
		return [2]int32{l.Onoff, l.Linger}
	}
	sockParity(t, func(t *testing.T, s sockStack) obs {
		c, _, _ := sockPair(t, s, "tcp")
		tc := c.(sockTCPConn)
		o := obs{Default: linger(t, c)}
		require.NoError(t, tc.SetLinger(-1))
		o.Minus1 = linger(t, c)
		require.NoError(t, tc.SetLinger(5))
		o.Five = linger(t, c)
		require.NoError(t, tc.SetLinger(0))
		o.Zero = linger(t, c)
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, obs{Default: [2]int32{0, 0}, Minus1: [2]int32{0, 0}, Five: [2]int32{1, 5}, Zero: [2]int32{1, 0}}, o)
	})
}

// sockControlCall is one ListenConfig/Dialer Control call.
type sockControlCall struct {
	Network, Address string
	ReuseAddr        int
}

func TestSockParityControl(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Calls             []sockControlCall
		ReuseAddr, V6Only int // on the listener afterwards
		DialCalls         []sockControlCall
		FailErr           sockErrObs
	}
	for _, tc := range []struct{ name, network, address string }{
		{"tcp-127", "tcp", "127.0.0.1:0"},
		{"tcp-wildcard", "tcp", ":0"},
		{"tcp4", "tcp4", ":0"},
		{"tcp6", "tcp6", "[::1]:0"},
		{"unix", "unix", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) obs {
				var o obs
				address := sockAddressOr(t, tc.network, tc.address)
				names := &sockNames{}
				names.add(&net.UnixAddr{Name: address, Net: "unix"}, "<path>")
				record := func(calls *[]sockControlCall) func(string, string, syscall.RawConn) error {
					return func(network, address string, rc syscall.RawConn) error {
						call := sockControlCall{Network: network, Address: names.str(address), ReuseAddr: -1}
						if err := rc.Control(func(fd uintptr) {
							call.ReuseAddr, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR)
						}); err != nil {
							return err
						}
						*calls = append(*calls, call)
						return nil
					}
				}
				ln, err := s.ListenWith(sockListenOpts{Control: record(&o.Calls)}, tc.network, address)
				require.NoError(t, err)
				defer ln.Close()
				o.ReuseAddr = sockOpt(t, ln, unix.SOL_SOCKET, unix.SO_REUSEADDR)
				if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.To4() == nil {
					o.V6Only = sockOpt(t, ln, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
				}
				names.add(ln.Addr(), "<L>")
				dialAddr := ln.Addr().String()
				if a, ok := ln.Addr().(*net.TCPAddr); ok && a.IP.IsUnspecified() {
					dialAddr = (&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: a.Port}).String()
					names.add(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: a.Port}, "<L>")
				}
				c, err := s.DialWith(t.Context(), sockDialOpts{Control: record(&o.DialCalls)}, ln.Addr().Network(), dialAddr)
				require.NoError(t, err)
				c.Close()
				// A failing Control aborts with its error inside the OpError.
				address = sockAddress(t, tc.network)
				names.add(&net.UnixAddr{Name: address, Net: "unix"}, "<path2>")
				_, err = s.ListenWith(sockListenOpts{Control: func(string, string, syscall.RawConn) error {
					return errors.New("control says no")
				}}, tc.network, address)
				o.FailErr = sockObserve(err, names)
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				require.Len(t, o.Calls, 1)
				switch tc.name {
				case "tcp-127", "tcp4":
					require.Equal(t, "tcp4", o.Calls[0].Network)
				case "tcp-wildcard":
					require.Equal(t, sockControlCall{"tcp6", ":0", 1}, o.Calls[0])
					require.Equal(t, 0, o.V6Only, "a wildcard tcp listener is dual-stack")
				case "tcp6":
					require.Equal(t, 1, o.V6Only)
				}
				if tc.network != "unix" {
					require.Equal(t, 1, o.Calls[0].ReuseAddr, "SO_REUSEADDR is set before Control runs")
					require.Equal(t, 1, o.ReuseAddr)
				}
				require.Equal(t, "listen", o.FailErr.Op)
				require.Contains(t, o.FailErr.Text, "control says no")
			})
		})
	}
}

// sockFileObs is what File() gives.
type sockFileObs struct {
	Name, ListenerName       string
	DupCloexec, DupNonblock  bool
	SameDescriptionAsOrig    bool // F_GETFL flags identical
	ConnWorksAfterFileClose  bool
	FileWorksAfterConnClosed bool
	ClosedErr                sockErrObs // File() on a closed conn
}

func TestSockParityFile(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockFileObs {
		c, peer, ln := sockPair(t, s, network)
		n := sockPairNames(c)
		n.add(ln.Addr(), "<L>")
		var o sockFileObs
		f, err := c.(sockConn).File()
		require.NoError(t, err)
		o.Name = n.str(f.Name())
		lf, err := ln.(sockListener).File()
		require.NoError(t, err)
		o.ListenerName = n.str(lf.Name())
		require.NoError(t, lf.Close())
		// Inspect the copy through its SyscallConn, which leaves
		// O_NONBLOCK alone (Fd would not, in net).
		o.DupNonblock, o.DupCloexec = sockFlags(t, f)
		require.NoError(t, f.Close())
		_, err = c.Write([]byte("x"))
		require.NoError(t, err)
		_, err = peer.Read(make([]byte, 1))
		o.ConnWorksAfterFileClose = err == nil

		f, err = c.(sockConn).File()
		require.NoError(t, err)
		require.NoError(t, c.Close())
		_, err = f.Write([]byte("y"))
		o.FileWorksAfterConnClosed = err == nil
		require.NoError(t, f.Close())
		_, err = c.(sockConn).File()
		o.ClosedErr = sockObserve(err, n)
		return o
	}, func(t *testing.T, s sockStack, network string, o sockFileObs) {
		if network == "tcp" {
			require.Equal(t, "tcp:<L>-><R>", o.Name)
		}
		require.True(t, o.DupCloexec)
		require.True(t, o.ConnWorksAfterFileClose)
		require.True(t, o.FileWorksAfterConnClosed)
		require.Equal(t, "file", o.ClosedErr.Op)
		require.True(t, o.ClosedErr.Closed)
	})
}

// TestSockFileFd asserts the documented difference of File().Fd(): net's
// copy is a socket-kind *os.File whose Fd switches the shared open file
// description to blocking, so the original conn becomes blocking too;
// gatenet's copy is an ordinary os.NewFile of a non-blocking descriptor,
// whose Fd leaves O_NONBLOCK alone (conn.go), so the conn keeps working
// with deadlines.
func TestSockFileFd(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	for _, s := range []sockStack{sockNetStack, sockGatenetStack} {
		t.Run(s.Name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			c, _, _ := sockPair(t, s, "tcp")
			f, err := c.(sockConn).File()
			require.NoError(t, err)
			defer f.Close()
			nb, _ := sockFlags(t, c)
			require.True(t, nb)
			_ = f.Fd()
			nb, _ = sockFlags(t, c)
			if s.isNet() {
				require.False(t, nb, "net: the copy's Fd makes the original blocking")
				return
			}
			require.True(t, nb, "gatenet: the copy's Fd leaves the original non-blocking")
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
			_, err = c.Read(make([]byte, 1))
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		})
	}
}

// sockRawObs is what SyscallConn gives before and after Close.
type sockRawObs struct {
	AfterCloseErr                       sockErrObs // SyscallConn() itself
	Control, RawRead, RawWrite          sockErrObs
	LnRead, LnWrite, LnControl          sockErrObs
	WaitedCalls                         bool // f was called more than once
	Data                                string
	DeadlineErr, CloseInterrupt         sockErrObs
	LnControlAfterClose, LnSCAfterClose sockErrObs
}

func TestSockParityRawConn(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockRawObs {
		var o sockRawObs
		c, peer, ln := sockPair(t, s, network)
		n := sockPairNames(c)
		n.add(ln.Addr(), "<Ln>")
		rc, err := c.(sockConn).SyscallConn()
		require.NoError(t, err)

		// Read: f returns false until the peer's data arrives.
		calls := 0
		buf := make([]byte, 16)
		var got int
		refused := make(chan struct{}, 1) // f has returned false once
		wrote := make(chan error, 1)
		go func() {
			<-refused
			_, err := peer.Write([]byte("raw"))
			wrote <- err
		}()
		err = rc.Read(func(fd uintptr) bool {
			calls++
			nr, err := unix.Read(int(fd), buf)
			if err == unix.EAGAIN {
				select {
				case refused <- struct{}{}:
				default:
				}
				return false
			}
			got = nr
			return true
		})
		require.NoError(t, err)
		require.NoError(t, <-wrote)
		o.WaitedCalls, o.Data = calls > 1, string(buf[:got])

		// A deadline interrupts the wait.
		require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
		o.DeadlineErr = sockObserve(rc.Read(func(uintptr) bool { return false }), n)

		lrc, err := ln.(sockListener).SyscallConn()
		require.NoError(t, err)
		o.LnRead = sockObserve(lrc.Read(func(uintptr) bool { return true }), n)
		o.LnWrite = sockObserve(lrc.Write(func(uintptr) bool { return true }), n)
		o.LnControl = sockObserve(lrc.Control(func(uintptr) {}), n)

		// Close interrupts a waiting RawConn.Read.
		require.NoError(t, c.SetReadDeadline(time.Time{}))
		rawDone := make(chan error, 1)
		go func() { rawDone <- rc.Read(func(uintptr) bool { return false }) }()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, c.Close())
		o.CloseInterrupt = sockObserve(<-rawDone, n)

		rc, err = c.(sockConn).SyscallConn()
		o.AfterCloseErr = sockObserve(err, n)
		o.Control = sockObserve(rc.Control(func(uintptr) {}), n)
		o.RawRead = sockObserve(rc.Read(func(uintptr) bool { return true }), n)
		o.RawWrite = sockObserve(rc.Write(func(uintptr) bool { return true }), n)
		require.NoError(t, ln.Close())
		o.LnControlAfterClose = sockObserve(lrc.Control(func(uintptr) {}), n)
		_, err = ln.(sockListener).SyscallConn()
		o.LnSCAfterClose = sockObserve(err, n)
		return o
	}, func(t *testing.T, s sockStack, network string, o sockRawObs) {
		require.True(t, o.WaitedCalls)
		require.Equal(t, "raw", o.Data)
		require.Equal(t, "raw-read", o.DeadlineErr.Op)
		require.True(t, o.DeadlineErr.Deadline)
		require.Equal(t, "raw-read", o.CloseInterrupt.Op)
		require.True(t, o.CloseInterrupt.Closed)
		require.True(t, o.AfterCloseErr.Nil, "SyscallConn succeeds after Close")
		require.Equal(t, "raw-control", o.Control.Op)
		require.True(t, o.Control.Closed)
		require.Equal(t, "<nil>", o.Control.Source)
		require.True(t, o.LnRead.EINVALBare)
		require.True(t, o.LnWrite.EINVALBare)
		require.True(t, o.LnControl.Nil)
	})
}
