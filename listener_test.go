//go:build linux

package gatenet_test

// The listeners (listener.go) side by side with net's (sockParity): what a
// closed, nil or zero listener reports, and where Listen binds.

import (
	"context"
	"math"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// sockListenerClosedObs is what a closed listener reports.
type sockListenerClosedObs struct {
	Accept, Close, SetDeadline sockErrObs
}

func TestSockParityListenerAfterClose(t *testing.T) {
	sockParityStreams(t, func(t *testing.T, s sockStack, network string) sockListenerClosedObs {
		ln, err := s.Listen(network, sockAddress(t, network))
		require.NoError(t, err)
		n := &sockNames{}
		n.add(ln.Addr(), "<L>")
		require.NoError(t, ln.Close())
		var o sockListenerClosedObs
		_, err = ln.Accept()
		o.Accept = sockObserve(err, n)
		o.Close = sockObserve(ln.Close(), n)
		o.SetDeadline = sockObserve(ln.(sockListener).SetDeadline(time.Now()), n)
		return o
	}, func(t *testing.T, s sockStack, network string, o sockListenerClosedObs) {
		require.Equal(t, "accept", o.Accept.Op)
		require.True(t, o.Accept.Closed)
		require.True(t, o.Accept.NetError)
		require.False(t, o.Accept.Temporary, "net/http would spin on a Temporary close")
		require.Equal(t, "<nil>", o.Accept.Source)
		require.Equal(t, "close", o.Close.Op)
		require.True(t, o.SetDeadline.ClosedBare, "listener SetDeadline errors are not wrapped")
	})
}

// TestSockListenEmptyAddress: Listen("tcp", "") is the wildcard on a
// chosen port, as with net.
func TestSockListenEmptyAddress(t *testing.T) {
	sockParity(t, func(t *testing.T, s sockStack) string {
		ln, err := s.Listen("tcp", "")
		require.NoError(t, err)
		defer ln.Close()
		host, _, err := net.SplitHostPort(ln.Addr().String())
		require.NoError(t, err)
		return host
	}, func(t *testing.T, s sockStack, host string) {
		require.Equal(t, "::", host)
	})
}

// sockListenerMethods is what a listener's every method reports, by name.
type sockListenerMethods map[string]sockErrObs

// listenerMethods calls each method net's listeners and gatenet's shared
// listener type have in common on ln, a nil or zero listener.
func listenerMethods(ln interface {
	net.Listener
	SetDeadline(time.Time) error
	SyscallConn() (syscall.RawConn, error)
	File() (*os.File, error)
}) sockListenerMethods {
	m := sockListenerMethods{}
	_, err := ln.Accept()
	m["Accept"] = sockObserve(err, nil)
	m["Close"] = sockObserve(ln.Close(), nil)
	m["SetDeadline"] = sockObserve(ln.SetDeadline(time.Now()), nil)
	_, err = ln.SyscallConn()
	m["SyscallConn"] = sockObserve(err, nil)
	_, err = ln.File()
	m["File"] = sockObserve(err, nil)
	return m
}

// TestListenerNilAndZero: every method of a nil or a zero TCPListener or
// UnixListener reports a bare EINVAL, as net's do, through the listener
// type they share (listener.go); gatenet's own AcceptContext and WaitRead
// too.
func TestListenerNilAndZero(t *testing.T) {
	type obs struct{ NilTCP, ZeroTCP, NilUnix, ZeroUnix sockListenerMethods }
	sockParity(t, func(t *testing.T, s sockStack) obs {
		if s.isNet() {
			return obs{
				listenerMethods((*net.TCPListener)(nil)), listenerMethods(&net.TCPListener{}),
				listenerMethods((*net.UnixListener)(nil)), listenerMethods(&net.UnixListener{}),
			}
		}
		return obs{
			listenerMethods((*gatenet.TCPListener)(nil)), listenerMethods(&gatenet.TCPListener{}),
			listenerMethods((*gatenet.UnixListener)(nil)), listenerMethods(&gatenet.UnixListener{}),
		}
	}, func(t *testing.T, s sockStack, o obs) {
		for _, m := range []sockListenerMethods{o.NilTCP, o.ZeroTCP, o.NilUnix, o.ZeroUnix} {
			for name, e := range m {
				require.True(t, e.EINVALBare, "%s: %+v", name, e)
			}
		}
	})
	type extra interface {
		AcceptContext(context.Context) (net.Conn, error)
		WaitRead(context.Context) error
	}
	for _, ln := range []extra{(*gatenet.TCPListener)(nil), &gatenet.TCPListener{}, (*gatenet.UnixListener)(nil), &gatenet.UnixListener{}} {
		_, err := ln.AcceptContext(context.Background())
		require.Equal(t, syscall.EINVAL, err, "AcceptContext on %#v", ln)
		require.Equal(t, syscall.EINVAL, ln.WaitRead(context.Background()), "WaitRead on %#v", ln)
	}
}

// listenBacklog is a listening socket's accept queue limit, which TCP_INFO
// reports in tcpi_sacked for a listener (sk_max_ack_backlog).
func listenBacklog(t *testing.T, ln net.Listener) int {
	t.Helper()
	var backlog int
	sockRawFD(t, ln, func(fd int) {
		info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO)
		require.NoError(t, err)
		backlog = int(info.Sacked)
	})
	return backlog
}

// TestListenConfigBacklog: Backlog is listen(2)'s, and one past what the
// kernel holds means somaxconn, net's default (compared with net's
// listener), as listen(2) reads any value above somaxconn. A Go int has
// more bits than listen(2)'s: 1<<32 used to reach it as 0, a queue of one.
func TestListenConfigBacklog(t *testing.T) {
	testutil.CheckLeaks(t)
	var lc net.ListenConfig
	std, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer std.Close()
	somaxconn := listenBacklog(t, std)
	for _, tc := range []struct {
		backlog, want int
	}{
		{0, somaxconn},
		{-1, somaxconn},
		{3, 3},
		{1 << 31, somaxconn},
		{1 << 32, somaxconn},
		{1<<32 + 3, somaxconn},
		{math.MaxInt, somaxconn},
	} {
		glc := gatenet.ListenConfig{Backlog: tc.backlog}
		ln, err := glc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		require.Equal(t, tc.want, listenBacklog(t, ln), "Backlog %d", tc.backlog)
		ln.Close()
	}
}
