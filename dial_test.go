//go:build linux

package gatenet_test

// Dialing: cancellation and timeouts while connect(2) is pending, the
// errors of malformed, unknown and unreachable addresses, each compared
// with net's, and when a connection's sockets join the epoll set.

import (
	"context"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// sockPendingListener returns the address of a loopback listener (backlog
// 0) whose accept queue is full, so that further connects stay pending
// (the kernel drops their SYNs). It skips the test if the kernel completes
// them anyway.
func sockPendingListener(t *testing.T) string {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(fd, 0))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	const tries = 4
	for range tries {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			t.Cleanup(func() { c.Close() }) // fills the queue; never accepted
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return addr // this connect stayed pending: the queue is full
		}
		require.NoError(t, err)
	}
	t.Skipf("all %d connects to a backlog-0 listener completed within 500 ms: this kernel does not keep connects pending", tries)
	return ""
}

// TestSockDialCancel: a context cancelled while connect is in progress
// ends the dial with the context's error and leaks no descriptor.
func TestSockDialCancel(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	addr := sockPendingListener(t)
	const after = 50 * time.Millisecond
	sockParity(t, func(t *testing.T, s sockStack) sockErrObs {
		fds := testutil.OpenFDs(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		start := time.Now() // before the timer is armed: it cannot fire sooner than after from here
		timer := time.AfterFunc(after, cancel)
		defer timer.Stop()
		c, err := s.DialWith(ctx, sockDialOpts{}, "tcp", addr)
		require.Nil(t, c)
		require.GreaterOrEqual(t, time.Since(start), after, "the connect did not stay pending")
		require.Equal(t, fds, testutil.OpenFDs(t), "descriptors after the cancelled dial")
		return sockObserve(err, nil)
	}, func(t *testing.T, s sockStack, o sockErrObs) {
		require.True(t, o.CtxCancel, "errors.Is(err, context.Canceled)")
		require.Equal(t, "dial tcp 127.0.0.1:<port>: operation was canceled", o.Text)
		require.False(t, o.Timeout)
		require.Equal(t, "dial", o.Op)
	})
}

// TestSockDialTimeout (checklist row 41): Dialer{Timeout: 200ms} against a
// pending connect gives "i/o timeout" with Timeout() true, and is either
// os.ErrDeadlineExceeded or context.DeadlineExceeded depending on which
// timer wins (net's behaviour; both are accepted).
func TestSockDialTimeout(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	addr := sockPendingListener(t)
	const timeout = 200 * time.Millisecond
	sockParity(t, func(t *testing.T, s sockStack) sockErrObs {
		fds := testutil.OpenFDs(t)
		start := time.Now()
		c, err := s.DialWith(t.Context(), sockDialOpts{Timeout: timeout}, "tcp", addr)
		require.Nil(t, c)
		require.GreaterOrEqual(t, time.Since(start), timeout-time.Millisecond)
		require.Equal(t, fds, testutil.OpenFDs(t))
		o := sockObserve(err, nil)
		require.True(t, o.Deadline || o.CtxDead, "neither os.ErrDeadlineExceeded nor context.DeadlineExceeded: %v", err)
		require.Contains(t, []string{"*poll.DeadlineExceededError: i/o timeout", "<unexported>: i/o timeout"}, o.Inner)
		// Which of the two it is depends on timing: compare the rest.
		o.Deadline, o.CtxDead, o.Inner = false, false, ""
		return o
	}, func(t *testing.T, s sockStack, o sockErrObs) {
		require.Equal(t, "dial tcp 127.0.0.1:<port>: i/o timeout", o.Text)
		require.True(t, o.Timeout)
		require.True(t, o.NetError)
	})
}

// TestSockDialErrors compares the errors of bad dials and listens.
func TestSockDialErrors(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	closed := sockClosedPort(t)
	dir := t.TempDir()
	inUse, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer inUse.Close()
	unixInUse, err := net.Listen("unix", dir+"/busy")
	require.NoError(t, err)
	defer unixInUse.Close()
	type call struct{ op, network, address string }
	for _, c := range []call{
		{"dial", "tcp", ""},
		{"dial", "unix", ""},
		{"dial", "foo", "127.0.0.1:80"},
		{"dial", "", "127.0.0.1:80"},
		{"dial", "tcp", "127.0.0.1"},
		{"dial", "tcp", "127.0.0.1:"},
		{"dial", "tcp", "127.0.0.1:99999"},
		{"dial", "tcp", "127.0.0.1:-1"},
		{"dial", "tcp", "127.0.0.1:http2x"},
		{"dial", "tcp", "[::1"},
		{"dial", "tcp", "::1:80"},
		{"dial", "tcp4", "[::1]:80"},
		{"dial", "tcp6", "127.0.0.1:80"},
		{"dial", "tcp", "127.0.0.1:0"},
		{"dial", "tcp", closed},
		{"listen", "tcp", "127.0.0.1:99999"},
		{"listen", "foo", ":0"},
		{"listen", "tcp", "[::1"},
		{"listen", "tcp4", "[::1]:0"},
		{"listen", "tcp", inUse.Addr().String()},
		{"listen", "unix", dir + "/busy"},
		{"listen", "unix", dir + "/no/such/dir/s"},
		{"listen", "udp", "127.0.0.1:0"},
	} {
		t.Run(c.op+"/"+c.network+"/"+c.address, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) sockErrObs {
				var err error
				if c.op == "dial" {
					var conn net.Conn
					conn, err = s.Dial(c.network, c.address)
					require.Nil(t, conn)
				} else {
					var ln net.Listener
					ln, err = s.Listen(c.network, c.address)
					require.Nil(t, ln)
				}
				n := &sockNames{}
				n.add(&net.UnixAddr{Name: dir, Net: "unix"}, "<dir>")
				return sockObserve(err, n)
			}, func(t *testing.T, s sockStack, o sockErrObs) {
				require.False(t, o.Nil)
				require.Equal(t, c.op, o.Op)
			})
		})
	}
}

// TestSockDialSelfConnect: a connect that the kernel let connect to
// itself (its chosen port was the closed destination's: go.dev/issue/2690)
// is closed and dialled again, as net does, so the dial fails as a
// refused one. A Control that binds the first socket to the destination
// makes the self-connect happen every time; the second socket is left to
// the kernel.
func TestSockDialSelfConnect(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	addr := sockClosedPort(t)
	port, err := strconv.Atoi(addr[len("127.0.0.1:"):])
	require.NoError(t, err)
	bindFirst := func(calls *int) func(context.Context, string, string, syscall.RawConn) error {
		return func(_ context.Context, _, _ string, c syscall.RawConn) error {
			if *calls++; *calls > 1 {
				return nil
			}
			var err error
			require.NoError(t, c.Control(func(fd uintptr) {
				if err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err == nil {
					err = unix.Bind(int(fd), &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port})
				}
			}))
			return err
		}
	}
	var netCalls, ourCalls int
	nd := net.Dialer{ControlContext: bindFirst(&netCalls)}
	_, netErr := nd.Dial("tcp4", addr)
	gd := gatenet.Dialer{ControlContext: bindFirst(&ourCalls)}
	c, err := gd.Dial("tcp4", addr)
	if c != nil {
		c.Close()
		t.Fatalf("a self-connected conn came back: %v -> %v", c.LocalAddr(), c.RemoteAddr())
	}
	require.ErrorIs(t, netErr, unix.ECONNREFUSED)
	require.ErrorIs(t, err, unix.ECONNREFUSED)
	require.Equal(t, err.Error(), netErr.Error())
	require.Equal(t, 2, netCalls)
	require.Equal(t, 2, ourCalls)
}

// TestSockDialOptions compares Dialer fields and the typed constructors.
func TestSockDialOptions(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Err           sockErrObs
		LocalHonoured bool   // the conn's (and the peer's view of its) address
		Listener      string // for ListenTCP
	}
	run := func(name string, f func(t *testing.T, s sockStack, ln net.Listener) obs, expect func(t *testing.T, o obs)) {
		t.Run(name, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) obs {
				ln, err := s.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer ln.Close()
				return f(t, s, ln)
			}, func(t *testing.T, s sockStack, o obs) { expect(t, o) })
		})
	}
	dialWith := func(o sockDialOpts) func(t *testing.T, s sockStack, ln net.Listener) obs {
		return func(t *testing.T, s sockStack, ln net.Listener) obs {
			c, err := s.DialWith(t.Context(), o, "tcp", ln.Addr().String())
			if c != nil {
				c.Close()
			}
			n := &sockNames{}
			n.add(ln.Addr(), "<L>")
			return obs{Err: sockObserve(err, n)}
		}
	}
	timedOut := func(t *testing.T, o obs) {
		require.Equal(t, "dial tcp <L>: i/o timeout", o.Err.Text)
		require.True(t, o.Err.Timeout)
	}
	run("past-deadline", dialWith(sockDialOpts{Deadline: time.Now().Add(-time.Second)}), timedOut)
	run("negative-timeout", dialWith(sockDialOpts{Timeout: -time.Second}), timedOut)
	run("local-addr", func(t *testing.T, s sockStack, ln net.Listener) obs {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1).To4(), Port: sockFreePort(t)}
		c, srv := sockConnect(t, s, ln, sockDialOpts{LocalAddr: local})
		return obs{LocalHonoured: c.LocalAddr().String() == local.String() && srv.RemoteAddr().String() == local.String()}
	}, func(t *testing.T, o obs) { require.True(t, o.LocalHonoured) })
	for name, local := range map[string]net.Addr{
		"local-unix-for-tcp": &net.UnixAddr{Name: "/nonexistent", Net: "unix"},
		"local-ipv6-for-v4":  &net.TCPAddr{IP: net.IPv6loopback},
	} {
		run(name, dialWith(sockDialOpts{LocalAddr: local}), func(t *testing.T, o obs) {
			require.Equal(t, "dial", o.Err.Op)
			require.Equal(t, "*net.AddrError", o.Err.Inner[:len("*net.AddrError")])
		})
	}
	run("local-tcp-for-unix", func(t *testing.T, s sockStack, ln net.Listener) obs {
		c, err := s.DialWith(t.Context(), sockDialOpts{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}, "unix", t.TempDir()+"/s")
		require.Nil(t, c)
		n := &sockNames{}
		return obs{Err: sockObserve(err, n)}
	}, func(t *testing.T, o obs) { require.Contains(t, o.Err.Text, "mismatched local address type") })
	run("DialTCP-nil-nil", func(t *testing.T, s sockStack, ln net.Listener) obs {
		c, err := s.DialTCP("tcp", nil, nil)
		require.Nil(t, c)
		return obs{Err: sockObserve(err, nil)}
	}, func(t *testing.T, o obs) { require.Equal(t, "dial tcp: missing address", o.Err.Text) })
	run("DialTCP-nil-laddr", func(t *testing.T, s sockStack, ln net.Listener) obs {
		c, err := s.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
		require.NoError(t, err)
		c.Close()
		return obs{}
	}, func(t *testing.T, o obs) {})
	run("DialTCP-udp", func(t *testing.T, s sockStack, ln net.Listener) obs {
		c, err := s.DialTCP("udp", nil, ln.Addr().(*net.TCPAddr))
		require.Nil(t, c)
		return obs{Err: sockObserve(err, nil)}
	}, func(t *testing.T, o obs) { require.Contains(t, o.Err.Text, "unknown network udp") })
	for _, network := range []string{"tcp", "tcp4", "tcp6", "udp"} {
		run("ListenTCP-nil-"+network, func(t *testing.T, s sockStack, _ net.Listener) obs {
			ln, err := s.ListenTCP(network, nil)
			if err != nil {
				return obs{Err: sockObserve(err, nil)}
			}
			defer ln.Close()
			return obs{Listener: (&sockNames{}).addr(ln.Addr())}
		}, func(t *testing.T, o obs) {})
	}
	// An IP of fewer than 4 bytes counts as IPv4, as net's TCPAddr.family
	// has it, so it fails as a non-IPv4 address.
	malformed := &net.TCPAddr{IP: net.IP{1, 2, 3}}
	run("ListenTCP-malformed-ip", func(t *testing.T, s sockStack, _ net.Listener) obs {
		ln, err := s.ListenTCP("tcp", malformed)
		require.Nil(t, ln)
		return obs{Err: sockObserve(err, nil)}
	}, func(t *testing.T, o obs) { require.Contains(t, o.Err.Text, "non-IPv4 address") })
	run("DialTCP-malformed-ip", func(t *testing.T, s sockStack, _ net.Listener) obs {
		c, err := s.DialTCP("tcp", nil, malformed)
		require.Nil(t, c)
		return obs{Err: sockObserve(err, nil)}
	}, func(t *testing.T, o obs) { require.Contains(t, o.Err.Text, "non-IPv4 address") })
	run("SetReadBuffer-negative", func(t *testing.T, s sockStack, ln net.Listener) obs {
		c, _ := sockConnect(t, s, ln, sockDialOpts{})
		err := c.(sockConn).SetReadBuffer(-1)
		werr := c.(sockConn).SetWriteBuffer(-1)
		return obs{
			Err:      sockObserve(err, nil),
			Listener: strconv.Itoa(sockOpt(t, c, unix.SOL_SOCKET, unix.SO_RCVBUF)) + "/" + sockObserve(werr, nil).Text + "/" + strconv.Itoa(sockOpt(t, c, unix.SOL_SOCKET, unix.SO_SNDBUF)),
		}
	}, func(t *testing.T, o obs) {})
}

// sockFreePort is a loopback port free a moment ago.
func sockFreePort(t *testing.T) int {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestSockDialLocalhost: dialing "localhost:port" (whatever /etc/hosts
// says) with happy eyeballs on and off reaches a listener on 127.0.0.1.
func TestSockDialLocalhost(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, delay := range []time.Duration{0, -1} {
		t.Run("FallbackDelay="+delay.String(), func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) string {
				ln, err := s.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer ln.Close()
				port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
				c, err := s.DialWith(t.Context(), sockDialOpts{FallbackDelay: delay}, "tcp", "localhost:"+port)
				require.NoError(t, err)
				defer c.Close()
				return (&sockNames{}).addr(c.RemoteAddr())
			}, func(t *testing.T, s sockStack, remote string) {
				require.Equal(t, "*net.TCPAddr 127.0.0.1:<port>", remote)
			})
		})
	}
}

// TestSockJoinsEpollAtFirstWait: a dialled and an accepted socket stay out
// of the poller's epoll set until a Read first has to wait (pollfd
// OpenLazy), then the Read is woken as usual; a socket closed without
// ever waiting never joins.
func TestSockJoinsEpollAtFirstWait(t *testing.T) {
	if os.Getenv(faults.EnvVar) != "" {
		t.Skipf("%s is set: injected delays wait on the poller", faults.EnvVar)
	}
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	client, server := testutil.TCPPair(t)
	inSet := func(c *gatenet.TCPConn) bool {
		t.Helper()
		var fd int
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(s uintptr) { fd = int(s) }))
		return testutil.InEpollSet(t, pollfd.IsPollDescriptor, fd)
	}
	require.False(t, inSet(client), "dialled socket in the set before any wait")
	require.False(t, inSet(server), "accepted socket in the set before any wait")

	got := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := server.Read(b[:])
		got <- err
	}()
	limit := time.Now().Add(time.Minute)
	for !inSet(server) {
		require.True(t, time.Now().Before(limit), "the blocked Read never joined the set")
		time.Sleep(time.Millisecond)
	}
	require.False(t, inSet(client))
	_, err := client.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, <-got)
	require.True(t, inSet(server))
	require.False(t, inSet(client), "a Write that never blocked joined")
}
