//go:build linux

package pollfd_test

import (
	"context"
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
		parked := func(wait func() error) <-chan error {
			base := p.Stats()
			mustEAGAIN(t, d)
			ch := make(chan error, 1)
			go func() { ch <- wait() }()
			waitParks(t, p, base, 1)
			return ch
		}
		plain := func() error { return d.Wait(pollfd.ModeRead) }

		ch := parked(plain)
		_, err := unix.Write(w, []byte("x"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, ch))
		var b [1]byte
		_, err = unix.Read(r, b[:])
		require.NoError(t, err)
		settled("an edge")

		ch = parked(plain)
		require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrTimeout)
		settled("a deadline set in the past")

		require.NoError(t, d.SetDeadline(time.Now().Add(20*time.Millisecond), pollfd.ModeRead))
		ch = parked(plain)
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrTimeout)
		settled("a deadline's timer")
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))

		// A context used once parks in a select; one that comes back is
		// registered and parks like a plain wait (ctxwait.go).
		ctx, cancel := context.WithCancel(context.Background())
		ch = parked(func() error { return d.WaitContext(ctx, pollfd.ModeRead) })
		cancel()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)
		settled("a context's cancellation")

		server, stop := context.WithCancel(context.Background())
		for range 2 {
			ch = parked(func() error { return d.WaitContext(server, pollfd.ModeRead) })
			_, err := unix.Write(w, []byte("x"))
			require.NoError(t, err)
			require.NoError(t, recvErr(t, ch))
			_, err = unix.Read(r, b[:])
			require.NoError(t, err)
			settled("an edge, under a context")
		}
		ch = parked(func() error { return d.WaitContext(server, pollfd.ModeRead) })
		stop()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)
		settled("a registered context's cancellation")

		ch = parked(plain)
		d.Unblock()
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrClosing)
		settled("Unblock")
	})
}

// TestHarvestDeferred: a waiter about to park does not harvest while a
// woken waiter of its shard is still waiting to run (strategy.go), and
// harvests again once none is.
func TestHarvestDeferred(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		if !p.Options().Harvest {
			t.Skip("no harvest")
		}
		r, w := newPipe(t)
		d := open(t, p, r)
		parkOnce := func() {
			t.Helper()
			base := p.Stats()
			mustEAGAIN(t, d)
			ch := goWait(d, pollfd.ModeRead)
			waitParks(t, p, base, 1)
			_, err := unix.Write(w, []byte("x"))
			require.NoError(t, err)
			require.NoError(t, recvErr(t, ch))
			var b [1]byte
			_, err = unix.Read(r, b[:])
			require.NoError(t, err)
		}

		base := p.Stats()
		parkOnce()
		require.Equal(t, base.HarvestsDeferred, p.Stats().HarvestsDeferred, "deferred with nothing queued")

		d.AddRunnable(1)
		base = p.Stats()
		parkOnce()
		st := p.Stats()
		d.AddRunnable(-1)
		require.Equal(t, base.HarvestsDeferred+1, st.HarvestsDeferred, "harvested past a queued waiter")
		require.Equal(t, base.Harvests, st.Harvests, "harvested past a queued waiter")
		require.Zero(t, p.Stats().Runnable)
	})
}
