//go:build linux

package pollfd_test

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// The deadline matrix (docs/DESIGN.md "Deadlines", stdlib-behaviour.md §2.3
// pollSetDeadline and netpolldeadlineimpl). Each case gets a fresh poller
// and a pipe whose read end is registered and empty, so the only thing that
// can wake its reader is what the case does. Only lower bounds on time are
// asserted; upper bounds come from the watchdog.

type deadlineCase struct {
	name string
	fn   func(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int)
}

var deadlineCases = []deadlineCase{
	{"TimeoutIsSticky", testTimeoutIsSticky},
	{"NewDeadlineParksAgain", testNewDeadlineParksAgain},
	{"ClearWhileParked", testClearWhileParked},
	{"PastDeadlineFailsPrepare", testPastDeadlineFailsPrepare},
	{"PastDeadlineWakesWaiter", testPastDeadlineWakesWaiter},
	{"ExtendWhileParked", testExtendWhileParked},
	{"ReadWriteIndependent", testReadWriteIndependent},
	{"EqualDeadlinesExpireTogether", testEqualDeadlinesExpireTogether},
	{"UnblockBeatsTimeout", testUnblockBeatsTimeout},
	{"ExpiryBeatsBufferedData", testExpiryBeatsBufferedData},
	{"StaleTimer", testStaleTimer},
	{"StaleTimerChurn", testStaleTimerChurn},
	{"ChurnWhileWaiting", testChurnWhileWaiting},
	{"SetAfterUnblock", testSetAfterUnblock},
	{"InvalidMode", testInvalidMode},
}

func TestDeadline(t *testing.T) {
	for _, o := range testutil.Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			for _, c := range deadlineCases {
				t.Run(c.name, func(t *testing.T) {
					testutil.CheckLeaks(t)
					testutil.Watchdog(t, 2*time.Minute)
					p := testutil.NewPoller(t, o)
					r, w := newPipe(t)
					c.fn(t, p, open(t, p, r), w)
				})
			}
		})
	}
}

// requireTimerFires checks that exactly n deadline timers have fired since
// base. A past deadline fails a Wait without a timer, so the count is
// waited for, then required to be no more.
func requireTimerFires(t *testing.T, p *pollfd.Poller, base pollfd.Stats, n uint64) {
	t.Helper()
	waitUntil(t, "the timer callback to count itself", func() bool { return p.Stats().TimerFires-base.TimerFires >= n })
	require.Equal(t, n, p.Stats().TimerFires-base.TimerFires, "timer fires")
}

// A Wait times out with ErrTimeout; with the deadline still expired, later
// Prepares and Waits fail at once, without parking.
func testTimeoutIsSticky(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	_, base := armedEAGAIN(t, p, d, 20*time.Millisecond)
	require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
	requireTimerFires(t, p, base, 1)

	base = p.Stats()
	for range 3 {
		require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrTimeout)
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
	}
	require.Equal(t, base.Parks, p.Stats().Parks, "an expired deadline must fail without parking")
	// The write direction has its own (unset) deadline.
	require.NoError(t, d.Prepare(pollfd.ModeWrite))
}

// After a timeout, a new future deadline makes the gate park again until
// that deadline fires: one park, one timer fire, no spinning.
func testNewDeadlineParksAgain(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	armedEAGAIN(t, p, d, 10*time.Millisecond)
	require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)

	var base, s pollfd.Stats
	testutil.RetrySlow(t, 60*time.Millisecond, "Wait parked", func(dl time.Duration) bool {
		var deadline time.Time
		deadline, base = armedEAGAIN(t, p, d, dl)
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
		require.False(t, time.Now().Before(deadline), "timed out before the deadline")
		requireTimerFires(t, p, base, 1)
		s = p.Stats()
		return s.Parks == base.Parks
	})
	require.Equal(t, uint64(1), s.Parks-base.Parks, "the waiter must park once, not spin")
	require.Less(t, s.EpollWaits-base.EpollWaits, uint64(10), "nothing happened on the descriptor")
	require.Less(t, s.Harvests-base.Harvests, uint64(10))
}

// Clearing the deadline while a waiter is parked does not wake it (not even
// when the old deadline passes); data then arriving wakes it with nil.
func testClearWhileParked(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	var done <-chan error
	var base pollfd.Stats
	testutil.RetrySlow(t, 30*time.Millisecond, "it was cleared", func(dl time.Duration) bool {
		done, base = parkedRead(t, p, d)
		require.NoError(t, d.SetDeadline(time.Now().Add(dl), pollfd.ModeRead))
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
		if p.Stats().TimerFires == base.TimerFires {
			return false // counted under the lock the clear took: no fire now means none
		}
		// The waiter was woken with ErrTimeout, or found the deadline
		// cleared and parked again: data ends either wait. Should this
		// be the last attempt, the count below still fails the test.
		_, err := unix.Write(w, []byte("x"))
		require.NoError(t, err)
		if err := recvErr(t, done); err != nil {
			require.ErrorIs(t, err, pollfd.ErrTimeout)
		}
		var buf [2]byte
		_, err = unix.Read(d.Fd(), buf[:])
		require.NoError(t, err)
		return true
	})
	requireParked(t, done, 100*time.Millisecond, "its deadline was cleared")
	require.Equal(t, base.TimerFires, p.Stats().TimerFires, "a cleared deadline's timer counted")

	_, err := unix.Write(w, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, recvErr(t, done))
	var buf [2]byte
	n, err := unix.Read(d.Fd(), buf[:])
	require.NoError(t, err)
	require.Equal(t, 1, n)
}

// A deadline in the past (or exactly now) fails Prepare and Wait at once.
func testPastDeadlineFailsPrepare(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	for _, dl := range []time.Time{past, time.Now().Add(-time.Millisecond), time.Now()} {
		require.NoError(t, d.SetDeadline(dl, pollfd.ModeRead))
		require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrTimeout)
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
	}
	require.Zero(t, p.Stats().Parks)
	require.Zero(t, p.Stats().TimerFires, "a past deadline expires without a timer")
	require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
	require.NoError(t, d.Prepare(pollfd.ModeRead))
}

// Setting a past deadline while a waiter is parked wakes it with ErrTimeout.
func testPastDeadlineWakesWaiter(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	done, base := parkedRead(t, p, d)
	require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
	require.ErrorIs(t, recvErr(t, done), pollfd.ErrTimeout)
	require.Equal(t, uint64(1), p.Stats().Wakeups-base.Wakeups)
	require.Zero(t, p.Stats().TimerFires)
}

// A deadline extended while a waiter is parked does not wake it early: it
// times out at the extended deadline, after the original one.
func testExtendWhileParked(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	original := time.Now().Add(40 * time.Millisecond)
	require.NoError(t, d.SetDeadline(original, pollfd.ModeRead))
	done, base := parkedRead(t, p, d)
	extended := time.Now().Add(150 * time.Millisecond)
	require.NoError(t, d.SetDeadline(extended, pollfd.ModeRead))
	require.ErrorIs(t, recvErr(t, done), pollfd.ErrTimeout)
	returned := time.Now()
	require.True(t, returned.After(original), "returned at the original deadline")
	require.False(t, returned.Before(extended), "returned before the extended deadline")
	requireTimerFires(t, p, base, 1)
	require.Equal(t, uint64(1), p.Stats().Parks-base.Parks)
}

// Read and write deadlines of the same instant expire together, as the
// runtime's one timer for both does: once a Wait for reading timed out, a
// Prepare for writing fails too, whichever direction's timer ran first.
// Set with ModeReadWrite or once per direction with the same time. Each
// direction had its own timer, and the write's often had not run yet.
// Deadlines of different instants stay apart.
func testEqualDeadlinesExpireTogether(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	for i := range 40 {
		at := time.Now().Add(time.Millisecond)
		if i%2 == 0 {
			require.NoError(t, d.SetDeadline(at, pollfd.ModeReadWrite))
		} else {
			require.NoError(t, d.SetDeadline(at, pollfd.ModeRead))
			require.NoError(t, d.SetDeadline(at, pollfd.ModeWrite))
		}
		d.Prepare(pollfd.ModeRead) // nil, or ErrTimeout where the deadline passed already
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
		require.ErrorIs(t, d.Prepare(pollfd.ModeWrite), pollfd.ErrTimeout, "round %d: the read timed out, the write did not", i)
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeReadWrite))
	}
	require.NoError(t, d.SetDeadline(time.Now().Add(time.Millisecond), pollfd.ModeRead))
	require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeWrite))
	d.Prepare(pollfd.ModeRead)
	require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
	require.NoError(t, d.Prepare(pollfd.ModeWrite))
	require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeReadWrite))
}

// Read and write deadlines are independent; ModeReadWrite sets both.
func testReadWriteIndependent(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	const r, wr, rw = pollfd.ModeRead, pollfd.ModeWrite, pollfd.ModeReadWrite
	check := func(readErr, writeErr error) {
		t.Helper()
		for _, c := range []struct {
			mode pollfd.Mode
			want error
		}{{r, readErr}, {wr, writeErr}} {
			if c.want == nil {
				require.NoError(t, d.Prepare(c.mode), "%v", c.mode)
			} else {
				require.ErrorIs(t, d.Prepare(c.mode), c.want, "%v", c.mode)
			}
		}
	}
	require.NoError(t, d.SetDeadline(past, r))
	check(pollfd.ErrTimeout, nil)
	require.NoError(t, d.SetDeadline(past, wr))
	check(pollfd.ErrTimeout, pollfd.ErrTimeout)
	require.NoError(t, d.SetDeadline(time.Time{}, r))
	check(nil, pollfd.ErrTimeout)
	require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), rw))
	check(nil, nil)
	require.NoError(t, d.SetDeadline(past, rw))
	check(pollfd.ErrTimeout, pollfd.ErrTimeout)
	require.NoError(t, d.SetDeadline(time.Time{}, rw))
	check(nil, nil)

	// A timer-driven expiry of one direction leaves the other alone.
	require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), rw))
	require.NoError(t, d.SetDeadline(time.Now().Add(10*time.Millisecond), wr))
	waitUntil(t, "the write deadline to fire", func() bool { return p.Stats().TimerFires == 1 })
	check(nil, pollfd.ErrTimeout)
}

// Closing beats timeout: after Unblock, Prepare and Wait report ErrClosing
// even with the deadline expired.
func testUnblockBeatsTimeout(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	require.NoError(t, d.SetDeadline(past, pollfd.ModeReadWrite))
	require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrTimeout)
	d.Unblock()
	for _, m := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite} {
		require.ErrorIs(t, d.Prepare(m), pollfd.ErrClosing, "%v", m)
		require.ErrorIs(t, d.Wait(m), pollfd.ErrClosing, "%v", m)
	}
	d.Unblock() // a second Unblock does nothing
	require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrClosing)
}

// Expiry racing buffered data: once expired, Prepare fails even though the
// kernel has data; a new future deadline lets the read succeed.
func testExpiryBeatsBufferedData(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	armedEAGAIN(t, p, d, 20*time.Millisecond)
	require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)

	base := p.Stats()
	_, err := unix.Write(w, []byte("late"))
	require.NoError(t, err)
	waitEvents(t, p, base, 1)
	require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrTimeout)
	require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrTimeout)

	require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeRead))
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	var buf [8]byte
	n, err := unix.Read(d.Fd(), buf[:])
	require.NoError(t, err)
	require.Equal(t, "late", string(buf[:n]))
}

// A stale timer never expires a newer deadline.
func testStaleTimer(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	// A machine slow enough to let 10ms pass between the two calls fires
	// the first timer before its re-arm; that fire counts, and it is in
	// base, since the callback counts under the lock the re-arm takes.
	require.NoError(t, d.SetDeadline(time.Now().Add(10*time.Millisecond), pollfd.ModeReadWrite))
	require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeReadWrite))
	base := p.Stats()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	require.NoError(t, d.Prepare(pollfd.ModeWrite))
	require.Equal(t, base.TimerFires, p.Stats().TimerFires)

	// And a cleared one never fires.
	require.NoError(t, d.SetDeadline(time.Now().Add(10*time.Millisecond), pollfd.ModeRead))
	require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
	base = p.Stats()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	require.Equal(t, base.TimerFires, p.Stats().TimerFires)
}

// The same, a few hundred times, with deadlines short enough that the old
// timer is often firing (or has just fired) when it is re-armed: the
// generation check must throw every stale expiry away.
func testStaleTimerChurn(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		short := time.Duration(rng.IntN(1500)) * time.Microsecond
		require.NoError(t, d.SetDeadline(time.Now().Add(short), pollfd.ModeRead))
		// Let the short timer get close to (or past) firing.
		for spin := time.Now().Add(short + time.Duration(rng.IntN(80)-20)*time.Microsecond); time.Now().Before(spin); {
			runtime.Gosched()
		}
		require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeRead))
		require.NoError(t, d.Prepare(pollfd.ModeRead), "iteration %d: a stale timer expired the new deadline", i)
		runtime.Gosched()
		require.NoError(t, d.Prepare(pollfd.ModeRead), "iteration %d: a stale timer expired the new deadline", i)
	}
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	t.Logf("timer fires that counted (each before its re-arm): %d of 300", p.Stats().TimerFires)
}

// Set/clear churn from one goroutine while another Waits: deadlines that
// are replaced or cleared before they pass never wake the waiter, and it
// still gets the data. Some rounds use deadlines so short that they may
// pass (or be in the past already) before they are replaced: if the
// replacement came after the deadline, the expiry was real and the waiter
// may return ErrTimeout (it is then restarted); otherwise such a return
// would come from a stale timer and fails the test.
func testChurnWhileWaiting(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	mustEAGAIN(t, d)
	var done <-chan error
	realExpiry := false // since the waiter (re)started
	restarts := 0
	startWaiter := func() {
		base := p.Stats()
		done = goWait(d, pollfd.ModeRead)
		waitParks(t, p, base, 1)
		realExpiry = false
	}
	checkWaiter := func(i int) {
		select {
		case err := <-done:
			require.ErrorIs(t, err, pollfd.ErrTimeout, "round %d", i)
			require.True(t, realExpiry, "round %d: a deadline replaced before it passed woke the waiter", i)
			restarts++
			require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
			startWaiter()
		default:
		}
	}
	startWaiter()
	base := p.Stats()

	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 2000 {
		switch i % 3 {
		case 0:
			require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeRead))
		case 1:
			require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
		case 2:
			short := time.Now().Add(time.Duration(rng.IntN(300)) * time.Microsecond)
			require.NoError(t, d.SetDeadline(short, pollfd.ModeReadWrite))
			if i%10 == 2 {
				// Replace it just around the moment its timer fires.
				until := short.Add(time.Duration(rng.IntN(100)-50) * time.Microsecond)
				for time.Now().Before(until) {
					runtime.Gosched()
				}
			}
			require.NoError(t, d.SetDeadline(time.Now().Add(time.Hour), pollfd.ModeReadWrite))
			if !time.Now().Before(short) {
				realExpiry = true
			}
		}
		checkWaiter(i)
		if i%100 == 0 {
			runtime.Gosched()
		}
	}
	require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeReadWrite))
	time.Sleep(50 * time.Millisecond)
	checkWaiter(-1)
	requireParked(t, done, 20*time.Millisecond, "its deadline was cleared")

	_, err := unix.Write(w, []byte("y"))
	require.NoError(t, err)
	require.NoError(t, recvErr(t, done))
	s := p.Stats()
	t.Logf("waiter restarted after a real expiry %d times; parks %d, wakeups %d, timer fires %d",
		restarts, s.Parks-base.Parks, s.Wakeups-base.Wakeups, s.TimerFires-base.TimerFires)
}

// SetDeadline on a closing descriptor changes nothing and says so.
func testSetAfterUnblock(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	d.Unblock()
	for _, m := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite, pollfd.ModeReadWrite} {
		require.ErrorIs(t, d.SetDeadline(time.Now().Add(time.Hour), m), pollfd.ErrClosing, "%v", m)
		require.ErrorIs(t, d.SetDeadline(past, m), pollfd.ErrClosing, "%v", m)
		require.ErrorIs(t, d.SetDeadline(time.Time{}, m), pollfd.ErrClosing, "%v", m)
	}
	require.NoError(t, d.Close())
	require.ErrorIs(t, d.SetDeadline(time.Time{}, pollfd.ModeRead), pollfd.ErrClosing)
}

// Modes other than read, write and (for SetDeadline) read+write are refused.
func testInvalidMode(t *testing.T, p *pollfd.Poller, d *pollfd.Desc, w int) {
	for _, m := range []pollfd.Mode{0, 1, 'x', pollfd.ModeReadWrite + 1, -1} {
		require.ErrorIs(t, d.SetDeadline(time.Now().Add(time.Hour), m), pollfd.ErrInvalidMode, "%v", m)
		require.ErrorIs(t, d.SetDeadline(past, m), pollfd.ErrInvalidMode, "%v", m)
	}
	for _, m := range []pollfd.Mode{0, 'x', pollfd.ModeReadWrite} {
		require.ErrorIs(t, d.Prepare(m), pollfd.ErrInvalidMode, "%v", m)
		require.ErrorIs(t, d.Wait(m), pollfd.ErrInvalidMode, "%v", m)
	}
	// An invalid SetDeadline changed nothing.
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	require.NoError(t, d.Prepare(pollfd.ModeWrite))
	require.Equal(t, "read", pollfd.ModeRead.String())
	require.Equal(t, "write", pollfd.ModeWrite.String())
	require.Equal(t, "read+write", pollfd.ModeReadWrite.String())
	require.Equal(t, "invalid mode", pollfd.Mode(0).String())
}
