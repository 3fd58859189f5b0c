//go:build linux

package gatenet_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// On a poller of several shards, a TCP connection's two ends, both this
// process's, share a shard (fd.go, placeBesidePeer; pollfd/place.go), so
// its hops are harvested rather than carried by a drain loop.

// TestPlaceBesidePeer: each pair on one shard, whichever family (a
// dual-stack listener accepting an IPv4 dialler included); the dialler's
// LocalAddr is the acceptor's RemoteAddr; many pairs use every shard; and
// the moved ends carry bytes both ways.
func TestPlaceBesidePeer(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true, Shards: 4})
	for _, tc := range []struct{ listenNet, listenAddr, dialNet, dialHost string }{
		{"tcp4", "127.0.0.1:0", "tcp4", "127.0.0.1"},
		{"tcp6", "[::1]:0", "tcp6", "::1"},
		{"tcp", ":0", "tcp4", "127.0.0.1"},
	} {
		t.Run(tc.listenNet+"/"+tc.dialNet, func(t *testing.T) {
			if tc.dialNet == "tcp6" && !supportsIPv6Loopback() {
				t.Skip("no IPv6 loopback")
			}
			ln, err := (&gatenet.ListenConfig{Poller: p}).Listen(context.Background(), tc.listenNet, tc.listenAddr)
			require.NoError(t, err)
			defer ln.Close()
			addr := net.JoinHostPort(tc.dialHost, fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
			d := &gatenet.Dialer{Poller: p}
			used := map[int]int{}
			for i := range 32 {
				c, err := d.Dial(tc.dialNet, addr)
				require.NoError(t, err)
				s, err := ln.Accept()
				require.NoError(t, err)
				cs, ss := gatenet.ShardOf(c.(gatenet.Pollable)), gatenet.ShardOf(s.(gatenet.Pollable))
				require.Equal(t, cs, ss, "pair %d: the dialled end on shard %d, the accepted one on %d", i, cs, ss)
				require.True(t, gatenet.LocalAddrKnown(c.(*gatenet.TCPConn)), "placement learnt the address")
				require.Equal(t, s.RemoteAddr().String(), c.LocalAddr().String())
				used[cs]++
				exchange(t, c, s)
				require.NoError(t, c.Close())
				require.NoError(t, s.Close())
			}
			require.GreaterOrEqual(t, len(used), 2, "32 pairs on one shard: %v", used)
		})
	}
}

// TestPlaceBesidePeerNot: the pairs placement cannot place — on a
// one-shard poller, with net's listener, over Unix sockets — work as
// before. A TCP dial learns its address at once, for net's self-connect
// check (dial.go); a Unix one when asked.
func TestPlaceBesidePeerNot(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	one := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true, Shards: 1})
	four := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true, Shards: 4})
	listen := func(p *pollfd.Poller) func(network, address string) (net.Listener, error) {
		return func(network, address string) (net.Listener, error) {
			return (&gatenet.ListenConfig{Poller: p}).Listen(context.Background(), network, address)
		}
	}
	for _, tc := range []struct {
		name           string
		listen         func(network, address string) (net.Listener, error)
		dialer         *pollfd.Poller
		network, laddr string
		learntAtDial   bool
	}{
		{"one shard", listen(one), one, "tcp4", "127.0.0.1:0", true},
		{"net's listener", net.Listen, four, "tcp4", "127.0.0.1:0", true},
		{"unix", listen(four), four, "unix", t.TempDir() + "/sock", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := tc.listen(tc.network, tc.laddr)
			require.NoError(t, err)
			defer ln.Close()
			c, err := (&gatenet.Dialer{Poller: tc.dialer}).Dial(tc.network, ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			s, err := ln.Accept()
			require.NoError(t, err)
			defer s.Close()
			if tcp, ok := c.(*gatenet.TCPConn); ok {
				require.Equal(t, tc.learntAtDial, gatenet.LocalAddrKnown(tcp), "address learnt at dial")
			}
			exchange(t, c, s)
			require.Equal(t, s.RemoteAddr().String(), c.LocalAddr().String())
		})
	}
}

// exchange sends a byte each way between a and b.
func exchange(t *testing.T, a, b net.Conn) {
	t.Helper()
	for _, dir := range [][2]net.Conn{{a, b}, {b, a}} {
		_, err := dir[0].Write([]byte{'x'})
		require.NoError(t, err)
		var buf [1]byte
		_, err = dir[1].Read(buf[:])
		require.NoError(t, err)
	}
}
