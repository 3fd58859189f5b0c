//go:build linux

package gatenet_test

import (
	"context"
	"math"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

func TestListenGroup(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, Shards: 2})
	lc := gatenet.ListenConfig{Poller: p}
	ls, err := lc.ListenGroup(context.Background(), "tcp4", "127.0.0.1:0", 2)
	require.NoError(t, err)
	require.Len(t, ls, 2)
	require.Equal(t, ls[0].Addr().String(), ls[1].Addr().String())

	// Each listener accepts on its own shard; its conns stay there.
	var mu sync.Mutex
	perListener := map[int]int{}
	var wg sync.WaitGroup
	conns := make(chan net.Conn, 64)
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				if got, want := gatenet.ShardOf(c.(gatenet.Pollable)), gatenet.ShardOf(l.(gatenet.Pollable)); got != want {
					t.Errorf("listener %d on shard %d accepted a conn on shard %d", i, want, got)
				}
				mu.Lock()
				perListener[i]++
				mu.Unlock()
				conns <- c
			}
		}()
	}
	d := gatenet.Dialer{Poller: p}
	var clients []net.Conn
	for range 32 {
		c, err := d.Dial("tcp4", ls[0].Addr().String())
		require.NoError(t, err)
		clients = append(clients, c)
	}
	for range 32 {
		c := <-conns
		clients = append(clients, c)
	}
	// Every accepted conn sits on its listener's shard (checked as it is
	// accepted); the 32 client conns are wherever their addresses place
	// them (fd.go, placeBesidePeer).
	st := p.ShardStats()
	clientsOn := [2]int64{}
	for _, c := range clients[:32] {
		clientsOn[gatenet.ShardOf(c.(gatenet.Pollable))]++
	}
	mu.Lock()
	t.Logf("accepted per listener: %v; clients per shard: %v; registered per shard: %d, %d",
		perListener, clientsOn, st[0].Registered, st[1].Registered)
	require.EqualValues(t, 1+clientsOn[0]+int64(perListener[0]), st[0].Registered)
	require.EqualValues(t, 1+clientsOn[1]+int64(perListener[1]), st[1].Registered)
	mu.Unlock()
	for _, c := range clients {
		c.Close()
	}
	for _, l := range ls {
		l.Close()
	}
	wg.Wait()

	// Bad input.
	_, err = gatenet.ListenGroup(context.Background(), "udp", "127.0.0.1:0", 2)
	require.Error(t, err)
	_, err = gatenet.ListenGroup(context.Background(), "tcp", "127.0.0.1:0", 0)
	require.Error(t, err)
}

// TestListenGroupHuge: a group larger than the descriptors allow fails
// with EMFILE from the listener that hit the limit, closing the others; it
// used to allocate room for all n first, and n = 1<<40 killed the process
// (out of memory) where n = 1<<59-1 panicked in makeslice.
func TestListenGroupHuge(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	open := testutil.OpenFDs(t)
	low := old
	low.Cur = uint64(open + 64) // a few dozen listeners, then EMFILE
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &low))
	t.Cleanup(func() { require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old)) })
	for _, n := range []int{1 << 40, 1<<59 - 1, math.MaxInt} {
		ls, err := gatenet.ListenGroup(context.Background(), "tcp4", "127.0.0.1:0", n)
		require.Nil(t, ls)
		require.ErrorIs(t, err, syscall.EMFILE, "n=%d", n)
		var op *net.OpError
		require.ErrorAs(t, err, &op)
		require.Equal(t, "listen", op.Op)
		require.Equal(t, open, testutil.OpenFDs(t), "n=%d: the opened listeners were not all closed", n)
	}
}
