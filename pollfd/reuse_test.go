//go:build linux

package pollfd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// Descriptor reuse: the kernel hands out a closed fd number again at once,
// so epoll data carries a token (slot + generation), never the fd, and the
// events of an old registration never reach the new one (table.go).

// TestReuseSameFd: pipe B gets the number pipe A's read end had; B's events
// reach B's Desc only, and A's Desc stays closed.
func TestReuseSameFd(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		var (
			a        *pollfd.Desc
			b        *fdPair
			attempts int
		)
		for {
			attempts++
			pa := newPipePair(t)
			var err error
			a, err = p.Open(pa[0])
			require.NoError(t, err)
			mustEAGAIN(t, a)
			// Leave an edge pending for A as it goes away.
			_, err = unix.Write(pa[1], []byte("A"))
			require.NoError(t, err)
			a.Unblock()
			require.NoError(t, a.Close())
			oldFd := pa[0]
			require.NoError(t, pa.close(0))
			require.NoError(t, pa.close(1))

			b = newPipePair(t)
			if b[0] == oldFd {
				break
			}
			// Something else took the number meanwhile: try again.
			require.Less(t, attempts, 10, "the kernel never handed fd %d back", oldFd)
		}
		require.Equal(t, a.Fd(), b[0])
		db := open(t, p, b[0])
		require.Equal(t, int64(1), p.Stats().Registered)

		// B is empty: a probe (an expired deadline, which a Ready would
		// beat) shows that nothing of A's leaked into B's gate.
		probeNotReady(t, p, db)

		mustEAGAIN(t, db)
		base := p.Stats()
		done := goWait(db, pollfd.ModeRead)
		waitParks(t, p, base, 1)
		_, err := unix.Write(b[1], []byte("B"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, done))
		var buf [2]byte
		n, err := unix.Read(b[0], buf[:])
		require.NoError(t, err)
		require.Equal(t, "B", string(buf[:n]))

		for _, m := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite} {
			require.ErrorIs(t, a.Prepare(m), pollfd.ErrClosing)
			require.ErrorIs(t, a.Wait(m), pollfd.ErrClosing)
		}
		require.ErrorIs(t, a.Close(), pollfd.ErrClosing)
		require.Equal(t, int64(1), p.Stats().Registered)
		t.Logf("fd %d reused after %d attempt(s); stale events %d", b[0], attempts, p.Stats().StaleEvents)
	})
}

// probeNotReady checks that d's read gate holds no Ready: a Wait must
// park (not return at once), and then only a deadline set in the past
// wakes it, with ErrTimeout. A nil would mean an event was misdelivered.
// Nothing else may be waiting on p meanwhile (Parks is per poller).
func probeNotReady(t testing.TB, p *pollfd.Poller, d *pollfd.Desc) {
	t.Helper()
	base := p.Stats()
	done := goWait(d, pollfd.ModeRead)
	waitUntil(t, "the probe to park", func() bool {
		select {
		case err := <-done:
			t.Fatalf("fd %d: Wait returned %v at once with nothing written: an event was misdelivered", d.Fd(), err)
		default:
		}
		return p.Stats().Parks > base.Parks
	})
	require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
	err := recvErr(t, done)
	require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
	require.ErrorIs(t, err, pollfd.ErrTimeout, "fd %d: woken by something other than its deadline: an event was misdelivered", d.Fd())
}

// TestReuseStress: 2000 cycles of open, register, write, wait, read and
// close, each leaving an edge in flight as it closes, while the fd numbers
// and table slots are reused. Every Wait returns because of its own pipe's
// data, verified by reading it; no Desc ever holds a Ready it did not earn.
func TestReuseStress(t *testing.T) {
	cycles := 2000
	if testing.Short() {
		cycles = 500
	}
	for _, o := range testutil.Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 3*time.Minute)
			p := testutil.NewPoller(t, o)

			// A second, long-lived descriptor whose traffic interleaves
			// with the churn, so batches mix live and stale events.
			kr, kw := newPipe(t)
			keep := open(t, p, kr)

			reused := 0
			lastFd := -1
			var buf [4]byte
			for i := range cycles {
				var fds [2]int
				require.NoError(t, unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
				r, w := fds[0], fds[1]
				if r == lastFd {
					reused++
				}
				lastFd = r
				d, err := p.Open(r)
				require.NoError(t, err)

				probeNotReady(t, p, d)
				mustEAGAIN(t, d)
				tag := byte(i)
				if i%2 == 0 {
					// Written before Wait: Ready consumed first, or a park.
					_, err = unix.Write(w, []byte{tag})
					require.NoError(t, err)
					require.NoError(t, d.Wait(pollfd.ModeRead))
				} else {
					// Written while Wait is (most likely) parked.
					go unix.Write(w, []byte{tag})
					require.NoError(t, d.Wait(pollfd.ModeRead))
				}
				// Wait returned: this pipe's byte must be there.
				n, err := unix.Read(r, buf[:])
				require.NoError(t, err, "cycle %d: Wait returned but the pipe is empty", i)
				require.Equal(t, []byte{tag}, buf[:n], "cycle %d", i)

				mustEAGAIN(t, d)
				probeNotReady(t, p, d)

				if i%7 == 0 {
					_, err = unix.Write(kw, []byte{'k'})
					require.NoError(t, err)
				}
				// Leave an edge in flight, then close at once.
				_, err = unix.Write(w, []byte{tag})
				require.NoError(t, err)
				d.Unblock()
				require.NoError(t, d.Close())
				unix.Close(r)
				unix.Close(w)
			}

			// The long-lived descriptor saw its own edges and nothing else
			// broke it: drain what was written and take one more round trip.
			for {
				if _, err := unix.Read(kr, buf[:]); errors.Is(err, unix.EAGAIN) {
					break
				}
			}
			require.NoError(t, keep.Prepare(pollfd.ModeRead))
			_, err := unix.Write(kw, []byte{'k'})
			require.NoError(t, err)
			require.NoError(t, keep.Wait(pollfd.ModeRead))
			n, err := unix.Read(kr, buf[:])
			require.NoError(t, err)
			require.Equal(t, "k", string(buf[:n]))

			s := p.Stats()
			require.Equal(t, int64(1), s.Registered)
			require.GreaterOrEqual(t, s.StaleEvents, uint64(0))
			t.Logf("%d cycles, fd number reused in %d; events %d, stale %d, parks %d, harvests %d",
				cycles, reused, s.Events, s.StaleEvents, s.Parks, s.Harvests)
		})
	}
}
