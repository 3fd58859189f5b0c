//go:build linux

package pollfd_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

func TestShards(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, Shards: 3})
	const n = 9
	var rs, ws [n]int
	var ds [n]*pollfd.Desc
	for i := range n {
		rs[i], ws[i] = newPipe(t)
		ds[i] = open(t, p, rs[i])
	}
	// Spread evenly.
	per := p.ShardStats()
	require.Len(t, per, 3)
	for i, s := range per {
		require.EqualValues(t, n/3, s.Registered, "shard %d", i)
	}
	require.EqualValues(t, n, p.Stats().Registered)

	// Each descriptor's events are delivered by its own shard: every shard
	// delivers exactly its three descriptors' events.
	base := p.ShardStats()
	for i := range n {
		mustEAGAIN(t, ds[i])
		_, err := unix.Write(ws[i], []byte("x"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, goWait(ds[i], pollfd.ModeRead)))
	}
	// The drain loop counts a batch's events after delivering them, so a
	// woken waiter can run ahead of the count: wait for it, then compare.
	waitUntil(t, "every shard to count its events", func() bool {
		for i, s := range p.ShardStats() {
			if s.Events-base[i].Events < n/3 {
				return false
			}
		}
		return true
	})
	for i, s := range p.ShardStats() {
		require.EqualValues(t, n/3, s.Events-base[i].Events, "shard %d", i)
	}

	// Closing one shard's descriptors leaves the others working.
	first := p.ShardStats()
	for i := 0; i < n; i += 3 { // Open went round-robin: i, i+3, i+6 share a shard
		closeDesc(t, ds[i])
	}
	after := p.ShardStats()
	emptied := -1
	for i := range after {
		if after[i].Registered == 0 {
			emptied = i
		}
		require.Contains(t, []int64{0, n / 3}, after[i].Registered, "shard %d", i)
	}
	require.NotEqual(t, -1, emptied, "one shard should be empty: %+v -> %+v", first, after)
	for i := range n {
		if i%3 == 0 {
			continue
		}
		var b [1]byte
		unix.Read(rs[i], b[:])
		mustEAGAIN(t, ds[i])
		ch := goWait(ds[i], pollfd.ModeRead)
		_, err := unix.Write(ws[i], []byte("y"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, ch))
	}
}

// TestShardsInvalid: a negative count, or one past 1024, is New's error.
// A huge one ran the process out of memory (1<<40) or panicked in
// makeslice (math.MaxInt); 100000 took 3.9 GiB and 7.7 s to fail with
// EMFILE.
func TestShardsInvalid(t *testing.T) {
	testutil.CheckLeaks(t)
	_, err := pollfd.New(pollfd.Options{Shards: -1})
	require.Error(t, err)
	for _, n := range []int{1025, 100000, 1 << 40, math.MaxInt} {
		p, err := pollfd.New(pollfd.Options{Shards: n})
		require.Nil(t, p)
		require.ErrorContains(t, err, "more than 1024 shards", "%d shards", n)
	}
	o := pollfd.Options{Shards: 1024}
	parsed, err := pollfd.ParseOptions(o.String())
	require.NoError(t, err, "the largest count's String parses back")
	require.Equal(t, o, parsed)
	p, err := pollfd.New(pollfd.Options{Shards: 0}) // 0 means 1
	require.NoError(t, err)
	require.Len(t, p.ShardStats(), 1)
	require.NoError(t, p.Close())
}
