//go:build linux

package gatenet_test

// Multipath TCP (mptcp.go): the same defaults, GODEBUG rules, fallbacks
// and reports as net, compared scenario by scenario (sockParity), and
// gatenet's conns over MPTCP put through nettest and the zero-copy paths.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/nettest"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// mptcpInKernel reports whether this kernel makes MPTCP sockets (and
// net.mptcp.enabled lets it), asked directly rather than through either
// library.
func mptcpInKernel() bool {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	if err != nil {
		return false
	}
	unix.Close(s)
	return true
}

// mptcpConfigs returns the stack's zero ListenConfig's and Dialer's
// MultipathTCP.
func mptcpConfigs(s sockStack) (listen, dial bool) {
	if s.isNet() {
		var lc net.ListenConfig
		var d net.Dialer
		return lc.MultipathTCP(), d.MultipathTCP()
	}
	var lc gatenet.ListenConfig
	var d gatenet.Dialer
	return lc.MultipathTCP(), d.MultipathTCP()
}

func boolPtr(b bool) *bool { return &b }

type mptcpListenObs struct {
	ConfigListen, ConfigDial bool // the zero configs' MultipathTCP()
	DefaultProto             int  // SO_PROTOCOL of Listen("tcp", …)
	OffProto, OnProto        int  // with SetMultipathTCP(false), (true)
	DialProto                int  // SO_PROTOCOL of a default Dial's conn
	ControlCalls             int  // a Control that always fails
	ControlErr               sockErrObs
}

func mptcpListenScenario(t *testing.T, s sockStack) mptcpListenObs {
	var o mptcpListenObs
	o.ConfigListen, o.ConfigDial = mptcpConfigs(s)
	ln, err := s.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	o.DefaultProto = sockOpt(t, ln, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	for _, c := range []struct {
		use   bool
		proto *int
	}{{false, &o.OffProto}, {true, &o.OnProto}} {
		l, err := s.ListenWith(sockListenOpts{MPTCP: boolPtr(c.use)}, "tcp", "127.0.0.1:0")
		require.NoError(t, err)
		*c.proto = sockOpt(t, l, unix.SOL_SOCKET, unix.SO_PROTOCOL)
		require.NoError(t, l.Close())
	}
	c, err := s.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	o.DialProto = sockOpt(t, c, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	require.NoError(t, c.Close())
	var names sockNames
	_, err = s.ListenWith(sockListenOpts{Control: func(string, string, syscall.RawConn) error {
		o.ControlCalls++
		return errors.New("refused by Control")
	}}, "tcp", "127.0.0.1:0")
	o.ControlErr = sockObserve(err, &names)
	return o
}

// Listeners use MPTCP by default where the kernel has it and dialers do
// not; a failing MPTCP attempt (here, Control's refusal) is made again
// with plain TCP, Control and all.
func TestMPTCPParityDefaults(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	t.Setenv("GODEBUG", "") // the built-in defaults, whatever the caller's environment
	kernel := mptcpInKernel()
	sockParity(t, mptcpListenScenario, func(t *testing.T, s sockStack, o mptcpListenObs) {
		require.True(t, o.ConfigListen)
		require.False(t, o.ConfigDial)
		require.Equal(t, unix.IPPROTO_TCP, o.OffProto)
		require.Equal(t, unix.IPPROTO_TCP, o.DialProto)
		require.False(t, o.ControlErr.Nil)
		if kernel {
			require.Equal(t, unix.IPPROTO_MPTCP, o.DefaultProto)
			require.Equal(t, unix.IPPROTO_MPTCP, o.OnProto)
			require.Equal(t, 2, o.ControlCalls, "the MPTCP attempt, then plain TCP")
		} else {
			t.Logf("no MPTCP in this kernel: every socket is plain TCP")
			require.Equal(t, unix.IPPROTO_TCP, o.DefaultProto)
			require.Equal(t, 1, o.ControlCalls)
		}
	})
}

// GODEBUG=multipathtcp=N: 0 off, 1 on, 2 listeners only, 3 dialers only;
// an explicit SetMultipathTCP wins over it.
func TestMPTCPParityGODEBUG(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	kernel := mptcpInKernel()
	for _, tc := range []struct {
		value        string
		listen, dial bool
	}{
		{"multipathtcp=0", false, false},
		{"multipathtcp=1", true, true},
		{"multipathtcp=2", true, false},
		{"multipathtcp=3", false, true},
		{"panicnil=1,multipathtcp=1,multipathtcp=0", false, false}, // the last one counts
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv("GODEBUG", tc.value)
			sockParity(t, mptcpListenScenario, func(t *testing.T, s sockStack, o mptcpListenObs) {
				require.Equal(t, tc.listen, o.ConfigListen)
				require.Equal(t, tc.dial, o.ConfigDial)
				if !kernel {
					return
				}
				protoOf := func(mptcp bool) int {
					if mptcp {
						return unix.IPPROTO_MPTCP
					}
					return unix.IPPROTO_TCP
				}
				require.Equal(t, protoOf(tc.listen), o.DefaultProto)
				require.Equal(t, protoOf(tc.dial), o.DialProto)
				// An explicit SetMultipathTCP, either way, wins over it.
				require.Equal(t, unix.IPPROTO_TCP, o.OffProto)
				require.Equal(t, unix.IPPROTO_MPTCP, o.OnProto)
			})
		})
	}
}

// Every combination of an MPTCP or plain dialer and listener: what each
// end's MultipathTCP reports and what socket it is, with data crossing.
func TestMPTCPParityConns(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	kernel := mptcpInKernel()
	for _, tc := range []struct {
		name         string
		dial, listen bool
	}{
		{"plain-to-plain", false, false},
		{"plain-to-mptcp", false, true},
		{"mptcp-to-plain", true, false},
		{"mptcp-to-mptcp", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type obs struct {
				Client, Server           bool // MultipathTCP()
				ClientProto, ServerProto int
				Echoed                   string
			}
			sockParity(t, func(t *testing.T, s sockStack) obs {
				ln, err := s.ListenWith(sockListenOpts{MPTCP: boolPtr(tc.listen)}, "tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer ln.Close()
				client, server := sockConnect(t, s, ln, sockDialOpts{MPTCP: boolPtr(tc.dial)})
				var o obs
				var err1, err2 error
				o.Client, err1 = client.(interface{ MultipathTCP() (bool, error) }).MultipathTCP()
				o.Server, err2 = server.(interface{ MultipathTCP() (bool, error) }).MultipathTCP()
				require.NoError(t, err1)
				require.NoError(t, err2)
				o.ClientProto = sockOpt(t, client, unix.SOL_SOCKET, unix.SO_PROTOCOL)
				o.ServerProto = sockOpt(t, server, unix.SOL_SOCKET, unix.SO_PROTOCOL)
				_, err = client.Write([]byte("over mptcp?"))
				require.NoError(t, err)
				buf := make([]byte, 64)
				n, err := server.Read(buf)
				require.NoError(t, err)
				o.Echoed = string(buf[:n])
				require.NoError(t, client.Close())
				require.NoError(t, server.Close())
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				require.Equal(t, "over mptcp?", o.Echoed)
				both := kernel && tc.dial && tc.listen
				require.Equal(t, both, o.Client)
				require.Equal(t, both, o.Server)
				if kernel && tc.dial {
					require.Equal(t, unix.IPPROTO_MPTCP, o.ClientProto, "an MPTCP socket, fallen back or not")
				} else {
					require.Equal(t, unix.IPPROTO_TCP, o.ClientProto)
				}
			})
		})
	}
}

// MPTCP between the two libraries, both ways round.
func TestMPTCPInterop(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	if !mptcpInKernel() {
		t.Skip("no MPTCP in this kernel")
	}
	for _, tc := range []struct {
		name     string
		listener sockStack
		dialer   sockStack
	}{{"gatenet-dials-net", sockNetStack, sockGatenetStack}, {"net-dials-gatenet", sockGatenetStack, sockNetStack}} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := tc.listener.ListenWith(sockListenOpts{MPTCP: boolPtr(true)}, "tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, _ := ln.Accept()
				accepted <- c
			}()
			client, err := tc.dialer.DialWith(context.Background(), sockDialOpts{MPTCP: boolPtr(true)}, "tcp", ln.Addr().String())
			require.NoError(t, err)
			defer client.Close()
			server := <-accepted
			require.NotNil(t, server)
			defer server.Close()
			for _, c := range []net.Conn{client, server} {
				using, err := c.(interface{ MultipathTCP() (bool, error) }).MultipathTCP()
				require.NoError(t, err)
				require.True(t, using, "%T", c)
			}
			sendRecv(t, client, server, "x")
		})
	}
}

// nettest's conformance suite over gatenet conns that are MPTCP at both ends.
func TestMPTCPNettest(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	if !mptcpInKernel() {
		t.Skip("no MPTCP in this kernel")
	}
	for _, acceptedFirst := range []bool{false, true} {
		name := "dialed-c1"
		if acceptedFirst {
			name = "accepted-c1"
		}
		t.Run(name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			nettest.TestConn(t, sockNettestPipe("tcp4", "127.0.0.1:0", acceptedFirst, true))
		})
	}
}

// io.Copy into and out of MPTCP conns, through a proxy: the zero-copy
// paths (or their fallbacks) keep every byte.
func TestMPTCPProxyCopy(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	if !mptcpInKernel() {
		t.Skip("no MPTCP in this kernel")
	}
	pair := func() (client, server net.Conn) {
		ln, err := sockGatenetStack.ListenWith(sockListenOpts{MPTCP: boolPtr(true)}, "tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return sockConnect(t, sockGatenetStack, ln, sockDialOpts{MPTCP: boolPtr(true)})
	}
	client, proxyIn := pair()
	proxyOut, server := pair()
	defer client.Close()
	defer server.Close()

	proxied := make(chan error, 1)
	go func() {
		_, err := io.Copy(proxyOut, proxyIn)
		proxyIn.Close()
		proxyOut.Close()
		proxied <- err
	}()
	payload := make([]byte, 8<<20)
	_, err := rand.Read(payload)
	require.NoError(t, err)
	go func() {
		client.Write(payload)
		client.(interface{ CloseWrite() error }).CloseWrite()
	}()
	var got bytes.Buffer
	_, err = io.Copy(&got, server)
	require.NoError(t, err)
	require.NoError(t, <-proxied)
	require.Equal(t, sha256.Sum256(payload), sha256.Sum256(got.Bytes()))
}

// TestMPTCPAfterClose: a closed conn's MultipathTCP answers false, with
// no error, whatever the socket was (net's answers true: its getsockopt
// fails on the closed descriptor, which it reads as MPTCP in use; the
// README lists the difference).
func TestMPTCPAfterClose(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	for _, mptcp := range []bool{false, true} {
		var lc gatenet.ListenConfig
		lc.SetMultipathTCP(mptcp)
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var d gatenet.Dialer
		d.SetMultipathTCP(mptcp)
		c, err := d.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.NoError(t, ln.Close())
		used, err := c.(*gatenet.TCPConn).MultipathTCP()
		require.NoError(t, err)
		require.False(t, used, "mptcp %v", mptcp)
	}
}
