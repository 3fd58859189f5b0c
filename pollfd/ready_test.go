//go:build linux

package pollfd_test

import (
	"context"
	"errors"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// TestReadyListSleepers: many workers share one list, more than the
// shard has park slots, some waiting in Next with a context that can never
// be done (asleep in a park slot, with RuntimePark) and some with one that
// can (on the list's channel). Every byte written to the watched pipes is
// read exactly once, no edge is lost between the two kinds of sleeper, and
// Close wakes every worker, wherever it sleeps.
func TestReadyListSleepers(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		const pipes, writes = 16, 20000
		l := pollfd.NewReadyList()
		defer l.Close()
		descs := make([]*pollfd.Desc, pipes)
		wfds := make([]int, pipes)
		for i := range pipes {
			r, w := newPipe(t)
			descs[i], wfds[i] = open(t, p, r), w
			require.NoError(t, descs[i].Watch(l, i))
		}
		base := p.Stats()

		var read atomic.Int64
		errs := make(chan error, 64)
		var workers sync.WaitGroup
		worker := func(ctx context.Context) {
			defer workers.Done()
			var buf [64]byte
			for {
				v, err := l.Next(ctx)
				if err != nil {
					if !errors.Is(err, pollfd.ErrListClosed) {
						errs <- err
					}
					return
				}
				i := v.(int)
				if err := descs[i].Prepare(pollfd.ModeRead); err != nil {
					errs <- err
					return
				}
				for { // to EAGAIN: any later byte raises an edge Watch sees
					n, err := unix.Read(descs[i].Fd(), buf[:])
					if err == unix.EAGAIN {
						break
					}
					if err != nil {
						errs <- err
						return
					}
					read.Add(int64(n))
				}
				if err := descs[i].Watch(l, i); err != nil {
					if !errors.Is(err, pollfd.ErrListClosed) { // a re-arm that Close overtook
						errs <- err
					}
					return
				}
			}
		}
		cancellable, cancel := context.WithCancel(context.Background())
		defer cancel()
		sleepers := 4*runtime.GOMAXPROCS(0) + 2 // more than the shard's slots
		for range sleepers {
			workers.Add(1)
			go worker(context.Background())
		}
		for range 2 {
			workers.Add(1)
			go worker(cancellable)
		}

		rng := rand.New(rand.NewSource(1))
		for k := range writes {
			_, err := unix.Write(wfds[rng.Intn(pipes)], []byte{1})
			require.NoError(t, err)
			if k%64 == 0 { // let the workers go idle now and then
				waitUntil(t, "the workers to read every byte", func() bool { return read.Load() == int64(k+1) })
			}
		}
		waitUntil(t, "the workers to read every byte", func() bool { return read.Load() == writes })
		if p.Options().RuntimePark {
			require.Greater(t, p.Stats().ParksInSlot, base.ParksInSlot, "no Next slept in a park slot")
		}

		l.Close() // the workers are idle: Close must wake each one
		stopped := make(chan error)
		go func() { workers.Wait(); close(stopped) }()
		require.NoError(t, recvErr(t, stopped))
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		require.EqualValues(t, writes, read.Load(), "a byte read twice")
	})
}

// TestReadyListWriteReports: a watched descriptor whose writes would
// block is reported once as writable when its peer makes room, and not
// before; with holdReads its read edges wait, unreported, for the next
// Watch, which reports them.
func TestReadyListWriteReports(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		a, b := newSocketpair(t)
		d := openSettled(t, p, a) // the registration's first edges are in
		l := pollfd.NewReadyList()
		defer l.Close()
		require.NoError(t, d.Watch(l, "a"))
		require.ErrorIs(t, d.WatchWrite(pollfd.NewReadyList(), false), pollfd.ErrNotWatched)

		// Full: a write would block. Prepare first, as a write does.
		require.NoError(t, d.Prepare(pollfd.ModeWrite))
		fillUntilEAGAIN(t, a)
		require.NoError(t, d.WatchWrite(l, true))
		nothing := func(why string) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			_, _, err := l.NextEvent(ctx)
			require.ErrorIs(t, err, context.DeadlineExceeded, why)
		}
		nothing("no room yet")

		// A read edge while reads are held: not reported.
		_, err := unix.Write(b, []byte("x"))
		require.NoError(t, err)
		nothing("reads are held")

		// The peer drains: one write report.
		buf := make([]byte, 1<<20)
		for {
			if _, err := unix.Read(b, buf); err != nil {
				break
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cookie, write, err := l.NextEvent(ctx)
		require.NoError(t, err)
		require.Equal(t, "a", cookie)
		require.True(t, write)
		nothing("one report per edge")

		// Watch ends the hold and reports the read edge that came.
		require.NoError(t, d.Watch(l, "a"))
		cookie, write, err = l.NextEvent(ctx)
		require.NoError(t, err)
		require.Equal(t, "a", cookie)
		require.False(t, write)

		// Closing drops a queued write report.
		require.NoError(t, d.Prepare(pollfd.ModeWrite))
		fillUntilEAGAIN(t, a)
		require.NoError(t, d.WatchWrite(l, false))
		for {
			if _, err := unix.Read(b, buf); err != nil {
				break
			}
		}
		waitUntil(t, "the write report", func() bool { return l.Len() == 1 })
		closeDesc(t, d)
		nothing("closed")
	})
}
