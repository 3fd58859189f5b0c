//go:build linux

package pollfd_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

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

// wakeByByte writes a byte to the pipe (r, w) whose reader waits on ch,
// checks the wait returned nil, and reads the byte back.
func wakeByByte(t *testing.T, ch <-chan error, r, w int) {
	t.Helper()
	_, err := unix.Write(w, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, recvErr(t, ch))
	var b [1]byte
	_, err = unix.Read(r, b[:])
	require.NoError(t, err)
}
