//go:build linux

package pollfd_test

import (
	"os"
	"os/signal"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// TestSignalStorm: epoll_wait is interrupted by signals (in Go routinely:
// SIGURG preemption, SIGCHLD, SIGPROF), and the drain loop must retry it
// without losing or inventing anything. 16 waiters stay parked through a
// storm of SIGUSR1 and SIGURG sent to the process, then each wakes with nil
// when its pipe gets data.
func TestSignalStorm(t *testing.T) {
	const (
		waiters  = 16
		stormFor = 300 * time.Millisecond
		// For the dedicated strategies the storm goes on past stormFor
		// until the drain thread has seen an EINTR, up to stormMax.
		stormMax   = 5 * time.Second
		maxSignals = 1_000_000
	)
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		// Catch SIGUSR1 so it does not kill the process; SIGURG is
		// harmless (the runtime uses it itself), catching it too is fine.
		sigs := make(chan os.Signal, 64)
		signal.Notify(sigs, unix.SIGUSR1, unix.SIGURG)
		defer signal.Stop(sigs)
		stopDrain := make(chan struct{})
		var drained sync.WaitGroup
		drained.Go(func() {
			for {
				select {
				case <-sigs:
				case <-stopDrain:
					return
				}
			}
		})
		defer drained.Wait()
		defer close(stopDrain)

		type waiter struct {
			d    *pollfd.Desc
			w    int
			done <-chan error
		}
		ws := make([]waiter, waiters)
		base := p.Stats()
		for i := range ws {
			r, w := newPipe(t)
			d := open(t, p, r)
			mustEAGAIN(t, d)
			ws[i] = waiter{d: d, w: w}
		}
		for i := range ws {
			ws[i].done = goWait(ws[i].d, pollfd.ModeRead)
		}
		waitParks(t, p, base, waiters)
		before := p.Stats()

		// The storm: as fast as possible, bounded in time and in count.
		pid := os.Getpid()
		sent := 0
		var sendErr error
		var storm sync.WaitGroup
		needEINTR := p.Options().Strategy == pollfd.Dedicated
		start := time.Now()
		storm.Go(func() {
			for sent < maxSignals {
				if sent%64 == 0 {
					elapsed := time.Since(start)
					if elapsed >= stormMax || elapsed >= stormFor &&
						(!needEINTR || p.Stats().EINTR > base.EINTR) {
						return
					}
				}
				sig := unix.SIGUSR1
				if sent%4 == 3 {
					sig = unix.SIGURG
				}
				if err := unix.Kill(pid, sig); err != nil {
					sendErr = err
					return
				}
				sent++
			}
		})
		storm.Wait()
		stormed := time.Since(start)
		require.NoError(t, sendErr)

		// Nobody woke: signals are not readiness.
		for i := range ws {
			select {
			case err := <-ws[i].done:
				t.Fatalf("waiter %d returned during the storm: %v", i, err)
			default:
			}
		}
		after := p.Stats()
		require.Equal(t, before.Wakeups, after.Wakeups, "a signal woke a waiter")
		require.Equal(t, before.Events, after.Events, "a signal produced an event")

		for i := range ws {
			_, err := unix.Write(ws[i].w, []byte{byte(i)})
			require.NoError(t, err)
		}
		var buf [2]byte
		for i := range ws {
			require.NoError(t, recvErr(t, ws[i].done), "waiter %d", i)
			n, err := unix.Read(ws[i].d.Fd(), buf[:])
			require.NoError(t, err)
			require.Equal(t, []byte{byte(i)}, buf[:n])
		}

		eintr := p.Stats().EINTR - base.EINTR
		t.Logf("%d signals in %v; epoll_wait EINTR retries: %d; epoll_waits: %d",
			sent, stormed.Round(time.Millisecond), eintr, p.Stats().EpollWaits-base.EpollWaits)
		if p.Options().Strategy == pollfd.Dedicated {
			// The drain thread sits in epoll_wait(-1) throughout, and a
			// process-directed signal goes to a thread that does not
			// already have one pending: it gets its share (anywhere from
			// one to thousands per storm, depending on scheduling).
			require.Positive(t, eintr, "the dedicated drain thread never saw EINTR")
		}
	})
}
