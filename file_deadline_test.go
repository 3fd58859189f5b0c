//go:build linux

package gatenet_test

// The deadline matrix on Files (stdlib-behaviour.md §2 and §11 rows 13-19),
// each case its own subtest, under every poller strategy. Timing checks are
// lower bounds only ("not before the deadline"); hangs are caught by the
// watchdog.

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

func TestFileDeadlines(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, p *pollfd.Poller)
	}{
		{"TimeoutThenParks", fileDeadlineTimeoutThenParks},
		{"ExpiryIsSticky", fileDeadlineExpiryIsSticky},
		{"ClearWhileBlocked", fileDeadlineClearWhileBlocked},
		{"PastDeadlineDoesNotBlock", fileDeadlinePastDoesNotBlock},
		{"MovedToPastWakesBlockedRead", fileDeadlineMovedToPastWakesRead},
		{"MovedToPastWakesBlockedWrite", fileDeadlineMovedToPastWakesWrite},
		{"ExtendedReleasesNobody", fileDeadlineExtendedReleasesNobody},
		{"ReadWriteIndependent", fileDeadlineReadWriteIndependent},
		{"CloseBeatsTimeout", fileDeadlineCloseBeatsTimeout},
		{"DataWithinDeadline", fileDeadlineDataWithin},
		{"NoStaleExpiry", fileDeadlineNoStaleExpiry},
	} {
		t.Run(c.name, func(t *testing.T) { eachFileStrategy(t, c.fn) })
	}
}

// requireFileTimeout asserts err is f's "read"/"write" deadline error.
func requireFileTimeout(t testing.TB, err error, op string, f *gatenet.File) {
	t.Helper()
	requirePathError(t, err, op, f.Name(), os.ErrDeadlineExceeded)
}

// fileWaitParked waits until p has parked more than before waiters.
func fileWaitParked(t testing.TB, p *pollfd.Poller, before uint64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.Stats().Parks <= before; {
		require.True(t, time.Now().Before(deadline), "the operation never parked")
		time.Sleep(time.Millisecond)
	}
}

// After a timeout, a second Read with a 200 ms deadline parks until the
// timer fires instead of spinning: the poller sees a handful of parks and
// wake-ups, not thousands.
func fileDeadlineTimeoutThenParks(t *testing.T, p *pollfd.Poller) {
	r, _ := newPipeOn(t, p)
	buf := make([]byte, 8)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := r.Read(buf)
	requireFileTimeout(t, err, "read", r)

	// A Read whose deadline passed before it parked (a loaded machine)
	// proves nothing: it is tried again with a longer deadline.
	var before, after pollfd.Stats
	var elapsed time.Duration
	testutil.RetrySlow(t, 200*time.Millisecond, "the Read parked", func(d time.Duration) bool {
		before = p.Stats()
		start := time.Now()
		require.NoError(t, r.SetReadDeadline(start.Add(d)))
		n, err := r.Read(buf)
		elapsed = time.Since(start)
		after = p.Stats()
		requireFileTimeout(t, err, "read", r)
		require.Zero(t, n)
		require.GreaterOrEqual(t, elapsed, d, "returned before the deadline")
		return after.Parks == before.Parks
	})
	parks := after.Parks - before.Parks
	waits := after.EpollWaits - before.EpollWaits
	wakeups := after.Wakeups - before.Wakeups
	t.Logf("during %v: parks=%d epoll_waits=%d wakeups=%d timer_fires=%d", elapsed, parks, waits, wakeups, after.TimerFires-before.TimerFires)
	require.GreaterOrEqual(t, parks, uint64(1), "the Read must park")
	require.LessOrEqual(t, parks, uint64(5), "the Read spins")
	require.LessOrEqual(t, waits, uint64(5), "the drain loop spins")
	require.LessOrEqual(t, wakeups, uint64(5), "the waiter is woken repeatedly")
}

// Expiry is sticky: once the deadline has passed, a Read times out with
// n=0 even though data is waiting, until the deadline is reset.
func fileDeadlineExpiryIsSticky(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	buf := make([]byte, 8)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err := r.Read(buf)
	requireFileTimeout(t, err, "read", r)
	_, err = w.Write([]byte("abc"))
	require.NoError(t, err)
	n, err := r.Read(buf)
	requireFileTimeout(t, err, "read", r)
	require.Zero(t, n, "no partial read past an expired deadline")
	require.NoError(t, r.SetReadDeadline(time.Now().Add(time.Minute)))
	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "abc", string(buf[:n]))
}

// Clearing the deadline of a blocked Read keeps it blocked past the old
// deadline; it then returns the data written later.
func fileDeadlineClearWhileBlocked(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	const d = 150 * time.Millisecond
	start := time.Now()
	require.NoError(t, r.SetReadDeadline(start.Add(d)))
	buf := make([]byte, 8)
	ch := goRead(r, buf)
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, r.SetReadDeadline(time.Time{}))
	if time.Since(start) >= d {
		// The machine stalled past the deadline before the clear: the
		// Read may legitimately have timed out. Unblock it and skip.
		w.Write([]byte("x"))
		<-ch
		t.Skip("stalled past the deadline before clearing it; nothing to check")
	}
	requireStillBlocked(t, ch, 2*d, "Read after its deadline was cleared")
	_, err := w.Write([]byte("late"))
	require.NoError(t, err)
	res := <-ch
	require.NoError(t, res.Err)
	require.Equal(t, "late", string(buf[:res.N]))
}

// A deadline already in the past fails at once with n=0, for Read and for
// Write, and the Write sends nothing.
func fileDeadlinePastDoesNotBlock(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
	n, err := r.Read(make([]byte, 8))
	requireFileTimeout(t, err, "read", r)
	require.Zero(t, n)
	require.NoError(t, w.SetWriteDeadline(time.Now().Add(-time.Second)))
	n, err = w.Write([]byte("x"))
	requireFileTimeout(t, err, "write", w)
	require.Zero(t, n)
	queued, err := unix.IoctlGetInt(fileSysfd(t, r), unix.TIOCINQ)
	require.NoError(t, err)
	require.Zero(t, queued, "a Write past its deadline must not write")
}

// A deadline moved into the past wakes a blocked Read with a timeout.
func fileDeadlineMovedToPastWakesRead(t *testing.T, p *pollfd.Poller) {
	r, _ := newPipeOn(t, p)
	parks := p.Stats().Parks
	ch := goRead(r, make([]byte, 8))
	fileWaitParked(t, p, parks)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
	res := <-ch
	requireFileTimeout(t, res.Err, "read", r)
	require.Zero(t, res.N)
}

// The same for a Write blocked on a full pipe: it keeps its partial count.
func fileDeadlineMovedToPastWakesWrite(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	parks := p.Stats().Parks
	ch := goWrite(w, make([]byte, 1<<20))
	waitPipeFull(t, r)
	fileWaitParked(t, p, parks)
	require.NoError(t, w.SetWriteDeadline(time.Now().Add(-time.Second)))
	res := <-ch
	requireFileTimeout(t, res.Err, "write", w)
	require.Equal(t, pipeCapacity, res.N)
}

// Extending the deadline of a blocked Read releases nobody: the Read times
// out, but not before the extended deadline.
func fileDeadlineExtendedReleasesNobody(t *testing.T, p *pollfd.Poller) {
	r, _ := newPipeOn(t, p)
	const first, extended = 150 * time.Millisecond, 400 * time.Millisecond
	start := time.Now()
	require.NoError(t, r.SetReadDeadline(start.Add(first)))
	parks := p.Stats().Parks
	ch := goRead(r, make([]byte, 8))
	fileWaitParked(t, p, parks)
	require.NoError(t, r.SetReadDeadline(start.Add(extended)))
	late := time.Since(start) >= first
	res := <-ch
	requireFileTimeout(t, res.Err, "read", r)
	if late {
		t.Skip("stalled past the first deadline before extending it; nothing to check")
	}
	require.GreaterOrEqual(t, time.Since(start), extended, "returned before the extended deadline")
}

// Read and write deadlines are independent; SetDeadline sets both. A pipe
// end is one-way, so the other direction is observed through the error:
// an expired deadline fails before the syscall (timeout), no deadline
// reaches it (EBADF).
func fileDeadlineReadWriteIndependent(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	past := time.Now().Add(-time.Second)
	buf := make([]byte, 8)

	// A past read deadline on w does not stop its Writes, and a past
	// write deadline on r does not stop its Reads.
	require.NoError(t, w.SetReadDeadline(past))
	require.NoError(t, r.SetWriteDeadline(past))
	_, err := w.Write([]byte("one"))
	require.NoError(t, err)
	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "one", string(buf[:n]))
	_, err = w.Read(buf)
	requireFileTimeout(t, err, "read", w)
	_, err = r.Write([]byte("x"))
	requireFileTimeout(t, err, "write", r)

	// Clearing one direction leaves the other expired.
	require.NoError(t, r.SetReadDeadline(time.Time{}))
	_, err = r.Write([]byte("x"))
	requireFileTimeout(t, err, "write", r)
	require.NoError(t, r.SetWriteDeadline(time.Time{}))
	_, err = r.Write([]byte("x"))
	requirePathError(t, err, "write", "|0", unix.EBADF)

	// SetDeadline sets both.
	require.NoError(t, r.SetDeadline(past))
	_, err = r.Read(buf)
	requireFileTimeout(t, err, "read", r)
	_, err = r.Write([]byte("x"))
	requireFileTimeout(t, err, "write", r)
	require.NoError(t, r.SetDeadline(time.Time{}))
	_, err = w.Write([]byte("two"))
	require.NoError(t, err)
	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "two", string(buf[:n]))
}

// After a deadline has expired, Close wins: Read reports os.ErrClosed, not
// the timeout.
func fileDeadlineCloseBeatsTimeout(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
	require.NoError(t, w.SetWriteDeadline(time.Now().Add(-time.Second)))
	require.NoError(t, r.Close())
	require.NoError(t, w.Close())
	_, err := r.Read(make([]byte, 8))
	requirePathError(t, err, "read", "|0", os.ErrClosed)
	_, err = w.Write([]byte("x"))
	requirePathError(t, err, "write", "|1", os.ErrClosed)
}

// Data that arrives inside the deadline is delivered.
func fileDeadlineDataWithin(t *testing.T, p *pollfd.Poller) {
	r, w := newPipeOn(t, p)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(time.Minute)))
	require.NoError(t, w.SetWriteDeadline(time.Now().Add(time.Minute)))
	buf := make([]byte, 8)
	ch := goRead(r, buf)
	time.Sleep(20 * time.Millisecond)
	n, err := w.Write([]byte("in time"))
	require.NoError(t, err)
	require.Equal(t, 7, n)
	res := <-ch
	require.NoError(t, res.Err)
	require.Equal(t, "in time", string(buf[:res.N]))
}

// A short deadline replaced at once by a long one never fires: 200 times
// (on 10 pipes at once, to keep the test short), set 5 ms then 1 h, wait
// past the 5 ms, and the Read and the Write still succeed.
func fileDeadlineNoStaleExpiry(t *testing.T, p *pollfd.Poller) {
	const pipes, rounds = 10, 20
	var wg sync.WaitGroup
	errs := make(chan error, pipes)
	for range pipes {
		r, w := newPipeOn(t, p)
		wg.Go(func() {
			buf := make([]byte, 1)
			for range rounds {
				now := time.Now()
				r.SetReadDeadline(now.Add(5 * time.Millisecond))
				w.SetWriteDeadline(now.Add(5 * time.Millisecond))
				r.SetReadDeadline(now.Add(time.Hour))
				w.SetWriteDeadline(now.Add(time.Hour))
				time.Sleep(20 * time.Millisecond)
				if _, err := w.Write([]byte("s")); err != nil {
					errs <- err
					return
				}
				if n, err := r.Read(buf); err != nil || n != 1 {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err, "a replaced deadline fired")
	}
}

// Independence on one two-way descriptor: a socketpair wrapped by NewFile
// (on the default poller).
func TestFileDeadlinesSocketpair(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	a, b := gatenet.NewFile(uintptr(fds[0]), "a"), gatenet.NewFile(uintptr(fds[1]), "b")
	closeFilesAtEnd(t, a, b)
	require.True(t, fileNonblocking(t, a), "NewFile makes a blocking socket pollable")
	buf := make([]byte, 8)

	require.NoError(t, a.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err = a.Read(buf)
	requireFileTimeout(t, err, "read", a)
	_, err = a.Write([]byte("w1"))
	require.NoError(t, err, "a past read deadline does not affect Write")
	n, err := b.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "w1", string(buf[:n]))

	require.NoError(t, a.SetDeadline(time.Time{}))
	require.NoError(t, a.SetWriteDeadline(time.Now().Add(-time.Second)))
	_, err = a.Write([]byte("x"))
	requireFileTimeout(t, err, "write", a)
	_, err = b.Write([]byte("r1"))
	require.NoError(t, err)
	n, err = a.Read(buf)
	require.NoError(t, err, "a past write deadline does not affect Read")
	require.Equal(t, "r1", string(buf[:n]))

	start := time.Now()
	require.NoError(t, a.SetDeadline(start.Add(30*time.Millisecond)))
	_, err = a.Read(buf)
	requireFileTimeout(t, err, "read", a)
	_, err = a.Write(make([]byte, 16<<20)) // more than the socket buffers hold
	requireFileTimeout(t, err, "write", a)
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}
