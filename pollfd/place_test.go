//go:build linux

package pollfd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// Placement (place.go): the default shard count, ShardFor's spread, and
// MoveToShard, which moves a lazily opened Desc that nothing else refers
// to yet, and nothing else.

func TestShardsFor(t *testing.T) {
	for procs, want := range map[int]int{-1: 1, 0: 1, 1: 1, 2: 1, 4: 1, 5: 2, 8: 2, 9: 3, 16: 4, 17: 5, 64: 16, 192: 48} {
		require.Equal(t, want, pollfd.ShardsFor(procs), "GOMAXPROCS %d", procs)
	}
}

// TestShardForSpreads: the same key, the same shard; ephemeral ports as
// Linux hands them out to connect (two apart) spread evenly, as a
// round-robin would.
func TestShardForSpreads(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, Shards: 4})
	one := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true})
	counts := make([]int, 4)
	const n = 4000
	for i := range n {
		key := uint64(32768 + 2*i)
		s := p.ShardFor(key)
		require.Equal(t, s, p.ShardFor(key))
		require.Zero(t, one.ShardFor(key))
		counts[s]++
	}
	for i, c := range counts {
		require.InDelta(t, n/4, c, n/16, "shard %d of %v", i, counts)
	}
}

// TestMoveToShard: a lazily opened Desc moves with its registration; its
// events then come from its new shard, whose drain loop starts for it,
// and the old shard's loop exits once it is empty.
func TestMoveToShard(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, strategy := range []pollfd.Strategy{pollfd.Nested, pollfd.Dedicated} {
		t.Run(strategy.String(), func(t *testing.T) {
			p := testutil.NewPoller(t, pollfd.Options{Strategy: strategy, Harvest: true, RuntimePark: true, Shards: 3})
			a, b := newSocketpair(t)
			d, err := p.OpenLazy(a, 0)
			require.NoError(t, err)
			t.Cleanup(func() { closeDesc(t, d) })
			require.Equal(t, 0, d.Shard())
			require.False(t, d.MoveToShard(3), "3 is shard 0 again")

			require.True(t, d.MoveToShard(-2))
			require.Equal(t, 2, d.Shard())
			registered := func() []int64 {
				var out []int64
				for _, s := range p.ShardStats() {
					out = append(out, s.Registered)
				}
				return out
			}
			require.Equal(t, []int64{0, 0, 1}, registered())
			waitUntil(t, "shard 0's drain loop to exit", func() bool { return p.ShardStats()[0].DrainLoops == 0 })

			base := p.ShardStats()
			for round := range 3 {
				ch, _ := parkedRead(t, p, d)
				require.True(t, inEpollSet(t, p, a), "round %d: parked but not in the set", round)
				wakeByByte(t, ch, a, b)
			}
			after := p.ShardStats()
			require.Greater(t, after[2].Events, base[2].Events, "shard 2 delivered d's events")
			require.Equal(t, base[0].Events, after[0].Events)
			require.Equal(t, base[1].Events, after[1].Events)

			require.False(t, d.MoveToShard(1), "a Desc in the epoll set stays")
			require.Equal(t, 2, d.Shard())
			closeDesc(t, d)
			require.Equal(t, []int64{0, 0, 0}, registered())
		})
	}
}

// TestMoveToShardRefused: what may refer to a Desc's shard keeps it there.
func TestMoveToShardRefused(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true, Shards: 2})
	lazy := func(t *testing.T) *pollfd.Desc {
		a, _ := newSocketpair(t)
		d, err := p.OpenLazy(a, 0)
		require.NoError(t, err)
		t.Cleanup(func() { closeDesc(t, d) })
		return d
	}
	for name, prepare := range map[string]func(*testing.T, *pollfd.Desc){
		"deadline": func(t *testing.T, d *pollfd.Desc) {
			require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeRead))
		},
		"deadline cleared": func(t *testing.T, d *pollfd.Desc) { // its timer may still be running
			require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeWrite))
			require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeWrite))
		},
		"unblocked": func(t *testing.T, d *pollfd.Desc) { d.Unblock() },
		"watched": func(t *testing.T, d *pollfd.Desc) {
			l := pollfd.NewReadyList()
			t.Cleanup(l.Close)
			require.NoError(t, d.Watch(l, nil))
			t.Cleanup(d.Unwatch)
		},
		"waited": func(t *testing.T, d *pollfd.Desc) { // a socket is writable: the wait joins and returns
			require.NoError(t, d.WaitContext(context.Background(), pollfd.ModeWrite))
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := lazy(t)
			prepare(t, d)
			require.False(t, d.MoveToShard(1))
			require.Equal(t, 0, d.Shard())
		})
	}
	t.Run("opened", func(t *testing.T) { // Open joins at once
		a, _ := newSocketpair(t)
		d := open(t, p, a)
		require.False(t, d.MoveToShard(d.Shard()+1))
	})
	st := p.ShardStats()
	require.Zero(t, st[1].Registered, "nothing moved to shard 1")
}
