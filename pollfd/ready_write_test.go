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
