//go:build linux

package pollfd_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// OpenLazy: a descriptor joins the epoll set at its first wait or watch,
// never before, and readiness that arrives before the join is not lost.
// Membership is read from the kernel: /proc/self/fdinfo of the poller's
// epoll descriptors lists every descriptor in their sets ("tfd:").

// inEpollSet reports whether fd is in the epoll set of one of p's shards.
func inEpollSet(t testing.TB, p *pollfd.Poller, fd int) bool {
	t.Helper()
	return testutil.InEpollSet(t, p.IsPollDescriptor, fd)
}

// openLazy is open for OpenLazy.
func openLazy(t testing.TB, p *pollfd.Poller, fd int) *pollfd.Desc {
	t.Helper()
	d, err := p.OpenLazy(fd, -1)
	require.NoError(t, err)
	t.Cleanup(func() { closeDesc(t, d) })
	return d
}

// TestOpenLazyJoinsAtFirstWait: no EPOLL_CTL_ADD at open, one at the first
// Wait, none after; the edge that ends the wait is delivered as usual.
func TestOpenLazyJoinsAtFirstWait(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		a, b := newSocketpair(t)
		d := openLazy(t, p, a)
		require.False(t, inEpollSet(t, p, a), "in the set before any wait")
		require.Zero(t, p.Stats().EpollAdds)
		require.Equal(t, int64(1), p.Stats().Registered)

		for round := range 3 {
			ch, _ := parkedRead(t, p, d)
			require.True(t, inEpollSet(t, p, a), "round %d: parked but not in the set", round)
			wakeByByte(t, ch, a, b)
		}
		require.Equal(t, uint64(1), p.Stats().EpollAdds, "one join for three waits")
	})
}

// TestOpenLazyReadyBeforeJoin: data that arrives after the read saw
// EAGAIN but before the first Wait joins is reported by the join itself:
// the Wait returns without any later edge.
func TestOpenLazyReadyBeforeJoin(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		for _, mode := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite} {
			a, b := newSocketpair(t)
			d := openLazy(t, p, a)
			if mode == pollfd.ModeRead {
				mustEAGAIN(t, d)
				_, err := unix.Write(b, []byte("x"))
				require.NoError(t, err)
			} else {
				require.NoError(t, d.Prepare(pollfd.ModeWrite))
				fillUntilEAGAIN(t, a)
				var buf [64 << 10]byte
				for { // make room: the socket turns writable before the join
					if _, err := unix.Read(b, buf[:]); err != nil {
						break
					}
				}
			}
			require.NoError(t, recvErr(t, goWait(d, mode)), "mode %v", mode)
		}
	})
}

// TestOpenLazyNeverWaited: a descriptor closed without a wait never
// enters the set, and its number, reused at once, registers cleanly.
func TestOpenLazyNeverWaited(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		f := newSocketpairPair(t)
		d, err := p.OpenLazy(f[0], -1)
		require.NoError(t, err)
		require.NoError(t, d.Prepare(pollfd.ModeRead))
		require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
		d.Unblock()
		require.ErrorIs(t, d.Wait(pollfd.ModeWrite), pollfd.ErrClosing)
		require.NoError(t, d.Close())
		require.Zero(t, p.Stats().EpollAdds, "a wait that fails at once, or a closed Desc, joined")
		require.Zero(t, p.Stats().Registered)
		old := f[0]
		require.NoError(t, f.close(0))

		g := newSocketpairPair(t)
		if g[0] != old && g[1] != old {
			t.Logf("fd %d was not handed back; the reuse half is skipped", old)
			return
		}
		fd := g[0]
		if g[1] == old {
			fd = g[1]
		}
		open(t, p, fd)
		require.True(t, inEpollSet(t, p, fd))
		require.Equal(t, uint64(1), p.Stats().EpollAdds)
	})
}

// TestOpenLazyWatchJoins: a ReadyList watch joins too, and reports the
// next edge.
func TestOpenLazyWatchJoins(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		a, b := newSocketpair(t)
		d := openLazy(t, p, a)
		l := pollfd.NewReadyList()
		defer l.Close()
		require.NoError(t, d.Watch(l, "a"))
		require.True(t, inEpollSet(t, p, a))
		_, err := unix.Write(b, []byte("x"))
		require.NoError(t, err)
		got, err := l.Next(t.Context())
		require.NoError(t, err)
		require.Equal(t, "a", got)
	})
}

// TestOpenLazyJoinRace: a reader and a writer make their first waits at
// once; one EPOLL_CTL_ADD between them (no EEXIST), and both are woken.
func TestOpenLazyJoinRace(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		const rounds = 50
		for range rounds {
			a, b := newSocketpair(t)
			d := openLazy(t, p, a)
			mustEAGAIN(t, d)
			require.NoError(t, d.Prepare(pollfd.ModeWrite))
			fillUntilEAGAIN(t, a)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, mode := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite} {
				wg.Go(func() { errs[i] = d.Wait(mode) })
			}
			_, err := unix.Write(b, []byte("x"))
			require.NoError(t, err)
			var buf [64 << 10]byte
			for {
				if _, err := unix.Read(b, buf[:]); err != nil {
					break
				}
			}
			wg.Wait()
			require.NoError(t, errs[0])
			require.NoError(t, errs[1])
			closeDesc(t, d)
		}
		require.Equal(t, uint64(rounds), p.Stats().EpollAdds)
	})
}
