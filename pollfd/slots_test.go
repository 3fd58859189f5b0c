//go:build linux

package pollfd_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestRuntimeParkOverflow: with RuntimePark, more waiters park than there
// are slots (a few per P); the ones without a slot park on their gates.
// Every waiter is woken by its own event, the rest by Unblock and by a
// deadline, whatever it parked on, and the slots are reused across rounds.
func TestRuntimeParkOverflow(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true})
	n := 8*runtime.GOMAXPROCS(0) + 3 // well past the slots
	pipes := make([][2]int, n)
	descs := make([]*pollfd.Desc, n)
	for i := range pipes {
		pipes[i][0], pipes[i][1] = newPipe(t)
		descs[i] = open(t, p, pipes[i][0])
	}
	// parkAll parks a reader on every descriptor and returns their results
	// once all have parked.
	parkAll := func() <-chan error {
		base := p.Stats().Parks
		errs := make(chan error, n)
		var wg sync.WaitGroup
		for _, d := range descs {
			require.NoError(t, d.Prepare(pollfd.ModeRead))
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- d.Wait(pollfd.ModeRead)
			}()
		}
		waitUntil(t, "every waiter to park", func() bool { return p.Stats().Parks-base >= uint64(n) })
		go func() { wg.Wait(); close(errs) }()
		return errs
	}

	// Woken by events, three rounds: slots are given back and reused.
	for range 3 {
		base := p.Stats()
		errs := parkAll()
		for i := range pipes {
			_, err := unix.Write(pipes[i][1], []byte{1})
			require.NoError(t, err)
		}
		for err := range errs {
			require.NoError(t, err)
		}
		s := p.Stats()
		require.Positive(t, s.ParksInSlot-base.ParksInSlot, "no waiter parked in a slot")
		require.Less(t, s.ParksInSlot-base.ParksInSlot, s.Parks-base.Parks, "every waiter found a slot: the overflow path did not run")
		var buf [8]byte
		for i := range pipes {
			_, err := unix.Read(pipes[i][0], buf[:])
			require.NoError(t, err)
		}
	}

	// Woken by a deadline in the past.
	errs := parkAll()
	for _, d := range descs {
		d.SetDeadline(time.Now().Add(-time.Second), pollfd.ModeRead)
	}
	for err := range errs {
		require.ErrorIs(t, err, pollfd.ErrTimeout)
	}
	for _, d := range descs {
		d.SetDeadline(time.Time{}, pollfd.ModeRead)
	}

	// Woken by Unblock.
	errs = parkAll()
	for _, d := range descs {
		d.Unblock()
	}
	for err := range errs {
		require.ErrorIs(t, err, pollfd.ErrClosing)
	}
}
