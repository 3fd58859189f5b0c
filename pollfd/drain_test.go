//go:build linux

package pollfd_test

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// loopOnly is each strategy without harvesting: a parked waiter can then
// be woken by nothing but the drain loop, so a missing loop is a Wait
// that never returns.
var loopOnly = []pollfd.Options{{Strategy: pollfd.Nested}, {Strategy: pollfd.Dedicated}}

// deliveredByLoop parks a reader on d (a pipe's read end whose write end
// is w) and checks that the drain loop wakes it for a byte written after
// it parked.
func deliveredByLoop(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	t.Helper()
	ch, _ := parkedRead(t, p, d)
	wakeByByte(t, ch, d.Fd(), w)
}

// TestDrainLoopIdleExit: a drain loop, of either strategy, starts with
// the first registered descriptor, ends once none is left (after its
// linger), and starts again, delivering events, with the next one.
func TestDrainLoopIdleExit(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	for _, opts := range loopOnly {
		t.Run(opts.String(), func(t *testing.T) {
			p := testutil.NewPoller(t, opts)
			st := p.Stats()
			require.Zero(t, st.DrainLoops, "a loop before any descriptor was registered")
			require.Zero(t, st.DrainStarts)

			r, w := newPipe(t)
			for round := 1; round <= 3; round++ {
				d, err := p.Open(r)
				require.NoError(t, err)
				st = p.Stats()
				require.EqualValues(t, 1, st.DrainLoops, "round %d: registered, but no loop", round)
				require.EqualValues(t, round, st.DrainStarts)
				deliveredByLoop(t, p, d, w)
				closeDesc(t, d)
				waitUntil(t, "the drain loop to exit", func() bool { return p.Stats().DrainLoops == 0 })
				require.EqualValues(t, round, p.Stats().DrainStarts)
			}
		})
	}
}

// TestDrainLoopRestartRace: with no linger, every Close of a shard's last
// descriptor sends the loop to its exit check while other goroutines
// register new descriptors. Each new descriptor's reader is woken by the
// loop alone (no harvesting), so an Open left without a loop hangs its
// Wait (the watchdog reports it); and the exits must really happen (the
// loop was started more than once).
func TestDrainLoopRestartRace(t *testing.T) {
	testutil.Watchdog(t, 5*time.Minute)
	t.Cleanup(pollfd.SetIdleLinger(0))
	for _, opts := range loopOnly {
		t.Run(opts.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			restartRace(t, testutil.NewPoller(t, opts))
		})
	}
}

func restartRace(t *testing.T, p *pollfd.Poller) {

	const workers = 4
	rounds := 400
	if testing.Short() {
		rounds = 50
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fds [2]int
			var b [1]byte
			for range rounds {
				if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
					t.Error(err)
					return
				}
				d, err := p.Open(fds[0])
				if err != nil {
					t.Error(err)
				} else {
					// Prepare, find the pipe empty, write, Wait: the edge
					// reaches the gate only through the drain loop.
					d.Prepare(pollfd.ModeRead)
					if _, err := unix.Read(fds[0], b[:]); err != unix.EAGAIN {
						t.Errorf("read of an empty pipe: %v, want EAGAIN", err)
					}
					unix.Write(fds[1], b[:])
					// Only a deadline (its own timer) can end a Wait that
					// no drain loop will ever wake.
					d.SetDeadline(time.Now().Add(patience/2), pollfd.ModeRead)
					if err := d.Wait(pollfd.ModeRead); err != nil {
						t.Errorf("Wait for an event only the drain loop delivers: %v", err)
					}
					d.Unblock()
					if err := d.Close(); err != nil {
						t.Errorf("Close: %v", err)
					}
				}
				unix.Close(fds[0])
				unix.Close(fds[1])
				// Now and then leave the shard empty long enough for the
				// loop to reach its exit check, and the next Open to race it.
				if rand.IntN(2) == 0 {
					time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	waitUntil(t, "the drain loop to exit", func() bool { return p.Stats().DrainLoops == 0 })
	st := p.Stats()
	t.Logf("%d descriptors, %d loop starts", workers*rounds, st.DrainStarts)
	require.Greater(t, st.DrainStarts, uint64(1), "the loop never exited while descriptors came and went")

	// And once more from idle.
	r, w := newPipe(t)
	d := open(t, p, r)
	deliveredByLoop(t, p, d, w)
}
