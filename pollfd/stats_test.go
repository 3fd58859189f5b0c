//go:build linux

package pollfd_test

import (
	"context"
	"expvar"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// The Poller's counters: wake-ups by cause, the drain loop's share, the
// Runnable count that defers harvesting, and their expvar export.

// TestStatsByCause: each way a parked waiter is woken (an edge, a
// deadline, a context's cancellation, Unblock) is counted under its own
// cause, and the causes add up to Wakeups.
func TestStatsByCause(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)

		ch, base := parkedRead(t, p, d)
		wakeByByte(t, ch, r, w)
		require.Equal(t, base.WakeupsEvent+1, p.Stats().WakeupsEvent)

		ch, base = parkedRead(t, p, d)
		require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrTimeout)
		require.Equal(t, base.WakeupsDeadline+1, p.Stats().WakeupsDeadline)
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))

		ctx, cancel := context.WithCancel(context.Background())
		ch, base = parkedContext(t, p, d, ctx)
		cancel()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)
		require.Equal(t, base.Canceled+1, p.Stats().Canceled)

		ch, base = parkedRead(t, p, d)
		d.Unblock()
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrClosing)
		st := p.Stats()
		require.Equal(t, base.WakeupsClose+1, st.WakeupsClose)
		require.Equal(t, st.WakeupsEvent+st.WakeupsDeadline+st.WakeupsClose, st.Wakeups)

		var sum uint64
		for _, n := range st.EventsPerWait {
			sum += n
		}
		require.Equal(t, st.EpollWaits, sum, "histogram counts every drain-loop return")
	})
}

var publishOnce sync.Once

func TestPublishExpvar(t *testing.T) {
	publishOnce.Do(func() { pollfd.PublishExpvar("gatenet_pollfd_test") })
	v := expvar.Get("gatenet_pollfd_test")
	require.NotNil(t, v)
	require.Contains(t, v.String(), `"Registered"`)
}

// TestStatsDrainDelivery: a wake-up the drain loop delivers is counted as
// the drain loop's (DrainEvents, DrainWakeups), with the time it took
// (DrainTime), on the Desc's own shard; the drain loops never deliver
// more than all deliverers together.
func TestStatsDrainDelivery(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)
		base := p.ShardStats()[d.Shard()]
		ch, _ := parkedRead(t, p, d)
		_, err := unix.Write(w, []byte("x"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, ch))
		// Nothing else waits, so no harvest can take the edge; the drain
		// loop counts a batch after delivering it, and the nested loop its
		// time when its callback returns, after that.
		waitUntil(t, "the drain loop to count its wake-up and its time", func() bool {
			st := p.ShardStats()[d.Shard()]
			return st.DrainWakeups > base.DrainWakeups && st.DrainTime > base.DrainTime
		})
		st := p.ShardStats()[d.Shard()]
		require.Equal(t, base.DrainWakeups+1, st.DrainWakeups)
		require.Greater(t, st.DrainEvents, base.DrainEvents)
		require.Greater(t, st.DrainTime, base.DrainTime)
		total := p.Stats()
		require.LessOrEqual(t, total.DrainEvents, total.Events)
		require.LessOrEqual(t, total.DrainWakeups, total.WakeupsEvent)
	})
}

// TestRunnableAccounting: every wake-up a waiter gets is counted in
// Stats.Runnable until the waiter runs, whatever woke it and whatever it
// parked on; so once every wait has returned, nothing is counted. A count
// that leaked would stop harvesting for good.
func TestRunnableAccounting(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)
		settled := func(what string) {
			t.Helper()
			require.Zero(t, p.Stats().Runnable, "after %s: woken waiters counted as not yet run", what)
		}
		parkIn := func(wait func() error) <-chan error {
			ch, _ := parked(t, p, d, wait)
			return ch
		}
		plain := func() error { return d.Wait(pollfd.ModeRead) }

		ch := parkIn(plain)
		wakeByByte(t, ch, r, w)
		settled("an edge")

		ch = parkIn(plain)
		require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrTimeout)
		settled("a deadline set in the past")

		require.NoError(t, d.SetDeadline(time.Now().Add(20*time.Millisecond), pollfd.ModeRead))
		ch = parkIn(plain)
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrTimeout)
		settled("a deadline's timer")
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))

		// A context used once parks in a select; one that comes back is
		// registered and parks like a plain wait (ctxwait.go).
		ctx, cancel := context.WithCancel(context.Background())
		ch = parkIn(func() error { return d.WaitContext(ctx, pollfd.ModeRead) })
		cancel()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)
		settled("a context's cancellation")

		server, stop := context.WithCancel(context.Background())
		for range 2 {
			ch = parkIn(func() error { return d.WaitContext(server, pollfd.ModeRead) })
			wakeByByte(t, ch, r, w)
			settled("an edge, under a context")
		}
		ch = parkIn(func() error { return d.WaitContext(server, pollfd.ModeRead) })
		stop()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)
		settled("a registered context's cancellation")

		ch = parkIn(plain)
		d.Unblock()
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrClosing)
		settled("Unblock")
	})
}

// TestHarvestDeferred: a waiter about to park does not harvest while a
// woken waiter of its shard is still waiting to run (strategy.go), nor
// take a park slot while as many as there are Ps are (slots.go), and does
// both again once none is.
func TestHarvestDeferred(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		o := p.Options()
		if !o.Harvest && !o.RuntimePark {
			t.Skip("neither harvest nor park slots")
		}
		r, w := newPipe(t)
		d := open(t, p, r)
		parkOnce := func() {
			t.Helper()
			ch, _ := parkedRead(t, p, d)
			wakeByByte(t, ch, r, w)
		}

		base := p.Stats()
		parkOnce()
		st := p.Stats()
		require.Equal(t, base.HarvestsDeferred, st.HarvestsDeferred, "deferred with nothing queued")
		if o.RuntimePark {
			require.Equal(t, base.ParksInSlot+1, st.ParksInSlot, "no park slot with nothing queued")
		}

		for _, queued := range []int32{1, int32(runtime.GOMAXPROCS(0))} {
			d.AddRunnable(queued)
			base = p.Stats()
			parkOnce()
			st = p.Stats()
			d.AddRunnable(-queued)
			if o.Harvest {
				require.Equal(t, base.HarvestsDeferred+1, st.HarvestsDeferred, "harvested past %d queued waiters", queued)
				require.Equal(t, base.Harvests, st.Harvests, "harvested past %d queued waiters", queued)
			}
			if o.RuntimePark && int(queued) == runtime.GOMAXPROCS(0) {
				require.Equal(t, base.ParksInSlot, st.ParksInSlot, "took a park slot with %d waiters queued", queued)
			}
		}
		require.Zero(t, p.Stats().Runnable)
	})
}
