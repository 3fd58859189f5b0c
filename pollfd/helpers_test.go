//go:build linux

package pollfd_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// Shared helpers of the poller suite. Nothing here asserts a wall-clock
// bound: waitUntil polls for a condition with a generous limit (a hang
// detector, like testutil.Watchdog), never a latency check.

func TestMain(m *testing.M) {
	testutil.VerifyTestMain(m)
}

// patience bounds every "wait until the poller has done X" loop. It is a
// hang detector, not a timing assertion.
const patience = time.Minute

// eachStrategy runs fn once per poller strategy, in its own subtest, with
// leak checks and a fresh poller (closed when the subtest ends).
var eachStrategy = testutil.EachStrategy

// fdPair is two descriptors closed when the test ends, unless the test
// closed one early with close (so a number the kernel has since handed out
// again is never closed twice).
type fdPair [2]int

func (f *fdPair) close(i int) error {
	fd := f[i]
	f[i] = -1
	return unix.Close(fd)
}

func (f *fdPair) cleanup(t testing.TB) {
	t.Cleanup(func() {
		for i := range f {
			if f[i] >= 0 {
				f.close(i)
			}
		}
	})
}

// newPipePair returns a non-blocking pipe (read end 0, write end 1).
func newPipePair(t testing.TB) *fdPair {
	t.Helper()
	f := new(fdPair)
	require.NoError(t, unix.Pipe2(f[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
	f.cleanup(t)
	return f
}

// newPipe returns a non-blocking pipe closed when t ends (after any Desc
// opened on it later, since cleanups run last-in first-out).
func newPipe(t testing.TB) (r, w int) {
	f := newPipePair(t)
	return f[0], f[1]
}

// newSocketpairPair returns a non-blocking AF_UNIX stream pair.
func newSocketpairPair(t testing.TB) *fdPair {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	f := &fdPair{fds[0], fds[1]}
	f.cleanup(t)
	return f
}

// newSocketpair returns a non-blocking AF_UNIX stream pair closed when t ends.
func newSocketpair(t testing.TB) (a, b int) {
	f := newSocketpairPair(t)
	return f[0], f[1]
}

// open registers fd with p and, when t ends, unblocks and closes the Desc
// (tolerating a test that already did).
func open(t testing.TB, p *pollfd.Poller, fd int) *pollfd.Desc {
	t.Helper()
	d, err := p.Open(fd)
	require.NoError(t, err)
	t.Cleanup(func() { closeDesc(t, d) })
	return d
}

// openSettled is open for a descriptor that is writable at once (an empty
// pipe's write end, a FIFO's, a socket): its registration reports one
// EPOLLOUT. It returns once that edge has been delivered to this Desc and
// consumed, so that a later Prepare really forgets it and a Wait then
// parks. It waits on the write gate itself rather than counting the
// poller's events: an event for another descriptor (one a previous test
// closed, still being dispatched) would count too, and the registration
// edge, landing after the caller's Prepare, would then let a Wait meant to
// park return at once.
func openSettled(t testing.TB, p *pollfd.Poller, fd int) *pollfd.Desc {
	t.Helper()
	d := open(t, p, fd)
	require.NoError(t, recvErr(t, goWait(d, pollfd.ModeWrite)), "the registration's EPOLLOUT")
	return d
}

func closeDesc(t testing.TB, d *pollfd.Desc) {
	t.Helper()
	d.Unblock()
	if err := d.Close(); err != nil && !errors.Is(err, pollfd.ErrClosing) {
		t.Errorf("closing desc for fd %d: %v", d.Fd(), err)
	}
}

// waitUntil polls cond until it holds, failing the test after patience.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	limit := time.Now().Add(patience)
	for i := 0; !cond(); i++ {
		if time.Now().After(limit) {
			t.Fatalf("still waiting after %v for %s", patience, what)
		}
		if i < 1000 {
			runtime.Gosched() // usually a matter of microseconds
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

// waitParks waits until p's Parks counter has grown by n since base: that
// many waiters have committed to park (the counter is bumped after the
// waiter published itself under the lock, so a wake from now on reaches it).
func waitParks(t testing.TB, p *pollfd.Poller, base pollfd.Stats, n uint64) {
	t.Helper()
	waitUntil(t, "waiters to park", func() bool { return p.Stats().Parks-base.Parks >= n })
}

// waitEvents waits until p has delivered at least n more events than base.
func waitEvents(t testing.TB, p *pollfd.Poller, base pollfd.Stats, n uint64) {
	t.Helper()
	waitUntil(t, "the drain loop to deliver an event", func() bool { return p.Stats().Events-base.Events >= n })
}

// mustEAGAIN performs the first half of an fd-layer read: Prepare, then a
// read that finds the pipe (or socket) empty.
func mustEAGAIN(t testing.TB, d *pollfd.Desc) {
	t.Helper()
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	var b [1]byte
	_, err := unix.Read(d.Fd(), b[:])
	require.ErrorIs(t, err, unix.EAGAIN)
}

// armedEAGAIN sets d's read deadline dl from now and performs mustEAGAIN
// before it passes, retrying with a longer one where a loaded machine let
// dl pass before Prepare ran (testutil.RetrySlow). It returns the deadline
// that held and p's Stats from just before it was set (a fire of an
// earlier attempt is counted in them: the callback counts under the lock
// the failed Prepare took after it).
func armedEAGAIN(t testing.TB, p *pollfd.Poller, d *pollfd.Desc, dl time.Duration) (deadline time.Time, base pollfd.Stats) {
	t.Helper()
	var err error
	testutil.RetrySlow(t, dl, "Prepare", func(dl time.Duration) bool {
		base = p.Stats()
		deadline = time.Now().Add(dl)
		require.NoError(t, d.SetDeadline(deadline, pollfd.ModeRead))
		err = d.Prepare(pollfd.ModeRead)
		return errors.Is(err, pollfd.ErrTimeout)
	})
	require.NoError(t, err)
	var b [1]byte
	_, err = unix.Read(d.Fd(), b[:])
	require.ErrorIs(t, err, unix.EAGAIN)
	return deadline, base
}

// fillUntilEAGAIN writes to fd until the kernel refuses with EAGAIN.
func fillUntilEAGAIN(t testing.TB, fd int) int {
	t.Helper()
	buf := make([]byte, 64<<10)
	total := 0
	for {
		n, err := unix.Write(fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return total
		}
		require.NoError(t, err)
		total += n
	}
}

// goWait runs d.Wait(mode) in a goroutine and returns its result channel.
func goWait(d *pollfd.Desc, mode pollfd.Mode) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- d.Wait(mode) }()
	return ch
}

// recvErr receives a Wait result, failing (rather than hanging) after
// patience.
func recvErr(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(patience):
		t.Fatalf("Wait did not return within %v", patience)
		return nil
	}
}

// requireParked fails the test if a result arrives on ch within grace:
// it checks that something did NOT wake a waiter. A lower bound only.
func requireParked(t testing.TB, ch <-chan error, grace time.Duration, why string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("Wait returned (%v) although %s", err, why)
	case <-time.After(grace):
	}
}

// past is a deadline long gone.
var past = time.Unix(1, 0)

// kicker starts a goroutine that writes one byte to w, from a fixed
// buffer (it allocates nothing), for every send on the returned channel;
// it is stopped when t ends.
func kicker(t testing.TB, w int) chan<- struct{} {
	kick := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var one [1]byte
		for range kick {
			unix.Write(w, one[:])
		}
	}()
	t.Cleanup(func() { close(kick); <-stopped })
	return kick
}

// pendingEdge leaves d (the read end of a pipe whose write end is w) with
// an edge nobody waits for: a read finds the pipe empty, msg is written,
// and the drain loop delivers the edge. It returns the Stats from before
// the write.
func pendingEdge(t testing.TB, p *pollfd.Poller, d *pollfd.Desc, w int, msg string) pollfd.Stats {
	t.Helper()
	mustEAGAIN(t, d)
	base := p.Stats()
	_, err := unix.Write(w, []byte(msg))
	require.NoError(t, err)
	waitEvents(t, p, base, 1)
	return base
}

// parkedRead starts a Wait for reading on d after a read found it empty,
// and returns once the Wait has parked: its result, and the Stats from
// before it.
func parkedRead(t testing.TB, p *pollfd.Poller, d *pollfd.Desc) (<-chan error, pollfd.Stats) {
	t.Helper()
	return parked(t, p, d, func() error { return d.Wait(pollfd.ModeRead) })
}

// parked is parkedRead with another wait on d's read side (WaitContext).
func parked(t testing.TB, p *pollfd.Poller, d *pollfd.Desc, wait func() error) (<-chan error, pollfd.Stats) {
	t.Helper()
	mustEAGAIN(t, d)
	base := p.Stats()
	ch := make(chan error, 1)
	go func() { ch <- wait() }()
	waitParks(t, p, base, 1)
	return ch, base
}

// parkedContext is parkedRead with d.WaitContext(ctx) for the wait.
func parkedContext(t testing.TB, p *pollfd.Poller, d *pollfd.Desc, ctx context.Context) (<-chan error, pollfd.Stats) {
	t.Helper()
	return parked(t, p, d, func() error { return d.WaitContext(ctx, pollfd.ModeRead) })
}

// wakeByByte writes a byte to the pipe (r, w) whose reader waits on ch,
// checks the wait returned nil, and reads the byte back.
func wakeByByte(t testing.TB, ch <-chan error, r, w int) {
	t.Helper()
	_, err := unix.Write(w, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, recvErr(t, ch))
	var b [1]byte
	_, err = unix.Read(r, b[:])
	require.NoError(t, err)
}
