//go:build linux

package pollfd_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/pollhook"
	"github.com/gatenet/gatenet/pollfd"
)

// The gate protocol (gate.go): Ready consumed first, Prepare clears Ready,
// the event-error rule, which events wake which direction, Unblock and
// Close, and one waiter per gate.

// TestReadyConsumedFirst: an edge delivered between the syscall's EAGAIN
// and Wait is kept, and Wait consumes it without parking.
func TestReadyConsumedFirst(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)
		base := pendingEdge(t, p, d, w, "z") // the drain loop has set Ready; nobody waits
		require.NoError(t, d.Wait(pollfd.ModeRead))
		require.Equal(t, base.Parks, p.Stats().Parks, "a Wait with Ready set must not park")
		var buf [2]byte
		n, err := unix.Read(r, buf[:])
		require.NoError(t, err)
		require.Equal(t, 1, n)

		// The write end: registration itself reports EPOLLOUT (an empty
		// pipe is writable), which is kept for the first Wait.
		dw := open(t, p, w)
		waitEvents(t, p, base, 2)
		require.NoError(t, dw.Wait(pollfd.ModeWrite))
		require.Equal(t, base.Parks, p.Stats().Parks)
	})
}

// TestPrepareClearsReady: Prepare forgets an earlier edge, because the
// syscall that follows sees that readiness itself. A Wait with no new edge
// then parks (here until a short deadline), although data is buffered.
func TestPrepareClearsReady(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)
		base := pendingEdge(t, p, d, w, "q")

		require.NoError(t, d.Prepare(pollfd.ModeRead))
		require.NoError(t, d.SetDeadline(time.Now().Add(30*time.Millisecond), pollfd.ModeRead))
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
		require.Equal(t, uint64(1), p.Stats().Parks-base.Parks, "Ready was cleared: Wait must park")

		// The syscall the fd layer would have made finds the data.
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
		require.NoError(t, d.Prepare(pollfd.ModeRead))
		var buf [2]byte
		n, err := unix.Read(r, buf[:])
		require.NoError(t, err)
		require.Equal(t, "q", string(buf[:n]))
	})
}

// TestEventErr: an event that is exactly EPOLLERR sets the event error:
// read-mode Prepare and Wait then fail with ErrNotPollable (after any
// Ready is consumed), write mode ignores it, and any other event clears it.
//
// The bare EPOLLERR comes from a FIFO's write end when the pipe is full
// (no EPOLLOUT) and its last reader closes (pipe_poll reports EPOLLERR for
// a writer without readers); a new reader draining it then sends EPOLLOUT.
func TestEventErr(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		fifo := filepath.Join(t.TempDir(), "fifo")
		require.NoError(t, unix.Mkfifo(fifo, 0o600))
		fr, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		readerOpen := true
		defer func() {
			if readerOpen {
				unix.Close(fr)
			}
		}()
		fw, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fw)

		d := openSettled(t, p, fw)
		require.NoError(t, d.Prepare(pollfd.ModeWrite))
		require.NoError(t, d.Prepare(pollfd.ModeRead))
		fillUntilEAGAIN(t, fw)

		base := p.Stats()
		writer := goWait(d, pollfd.ModeWrite)
		reader := goWait(d, pollfd.ModeRead)
		waitParks(t, p, base, 2)

		// Bare EPOLLERR: both directions wake, with readiness.
		require.NoError(t, unix.Close(fr))
		readerOpen = false
		require.NoError(t, recvErr(t, writer), "EPOLLERR wakes the writer, whose write(2) reports the error")
		require.NoError(t, recvErr(t, reader), "Ready is consumed before the event error is checked")

		require.ErrorIs(t, d.Prepare(pollfd.ModeRead), pollfd.ErrNotPollable)
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrNotPollable)
		require.NoError(t, d.Prepare(pollfd.ModeWrite), "the event error concerns reads only")
		require.EqualError(t, pollfd.ErrNotPollable, "not pollable")

		// A new reader drains the FIFO: EPOLLOUT, a non-error event, clears it.
		fr2, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fr2)
		base = p.Stats()
		buf := make([]byte, 64<<10)
		for {
			_, err := unix.Read(fr2, buf)
			if err == unix.EAGAIN {
				break
			}
			require.NoError(t, err)
		}
		waitEvents(t, p, base, 1)
		require.NoError(t, d.Prepare(pollfd.ModeRead))
		require.NoError(t, d.Prepare(pollfd.ModeWrite))
	})
}

// TestHUPWakesBoth: a hang-up wakes both directions; a half-close (RDHUP)
// wakes only the reader.
func TestHUPWakesBoth(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		t.Run("pipe", func(t *testing.T) {
			pp := newPipePair(t)
			r := pp[0]
			d := open(t, p, r)
			done, _ := parkedRead(t, p, d)
			require.NoError(t, pp.close(1))
			require.NoError(t, recvErr(t, done))
			var buf [1]byte
			n, err := unix.Read(r, buf[:])
			require.NoError(t, err)
			require.Zero(t, n, "EOF")
		})
		for _, how := range []string{"close", "shutdown"} {
			t.Run("socketpair "+how, func(t *testing.T) {
				sp := newSocketpairPair(t)
				a := sp[0]
				_, reader, writer := parkBoth(t, p, a)
				if how == "close" {
					require.NoError(t, sp.close(1))
				} else {
					require.NoError(t, unix.Shutdown(sp[1], unix.SHUT_RDWR))
				}
				require.NoError(t, recvErr(t, reader))
				require.NoError(t, recvErr(t, writer))
				var buf [1]byte
				n, err := unix.Read(a, buf[:])
				if how == "close" {
					// b closed with a's data unread in its queue.
					require.ErrorIs(t, err, unix.ECONNRESET)
				} else {
					require.NoError(t, err)
					require.Zero(t, n, "EOF")
				}
				_, err = unix.SendmsgN(a, buf[:], nil, nil, unix.MSG_NOSIGNAL)
				require.ErrorIs(t, err, unix.EPIPE)
			})
		}
		t.Run("socketpair half-close", func(t *testing.T) {
			a, b := newSocketpair(t)
			d, reader, writer := parkBoth(t, p, a)
			require.NoError(t, unix.Shutdown(b, unix.SHUT_WR))
			require.NoError(t, recvErr(t, reader))
			requireParked(t, writer, 50*time.Millisecond, "EPOLLRDHUP wakes only the reader")
			d.Unblock()
			require.ErrorIs(t, recvErr(t, writer), pollfd.ErrClosing)
		})
	})
}

// parkBoth registers the socket a, fills it to EAGAIN and parks a reader
// and a writer on it.
func parkBoth(t *testing.T, p *pollfd.Poller, a int) (d *pollfd.Desc, reader, writer <-chan error) {
	t.Helper()
	d = openSettled(t, p, a)
	require.NoError(t, d.Prepare(pollfd.ModeWrite))
	fillUntilEAGAIN(t, d.Fd())
	mustEAGAIN(t, d)
	base := p.Stats()
	reader = goWait(d, pollfd.ModeRead)
	writer = goWait(d, pollfd.ModeWrite)
	waitParks(t, p, base, 2)
	return d, reader, writer
}

// TestUnblockWakesBoth: Unblock wakes a parked reader and a parked writer
// with ErrClosing, and every later Prepare and Wait fails the same way.
func TestUnblockWakesBoth(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		a, _ := newSocketpair(t)
		d, reader, writer := parkBoth(t, p, a)
		base := p.Stats()
		d.Unblock()
		require.ErrorIs(t, recvErr(t, reader), pollfd.ErrClosing)
		require.ErrorIs(t, recvErr(t, writer), pollfd.ErrClosing)
		require.Equal(t, uint64(2), p.Stats().Wakeups-base.Wakeups)
		for _, m := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite} {
			require.ErrorIs(t, d.Prepare(m), pollfd.ErrClosing)
			require.ErrorIs(t, d.Wait(m), pollfd.ErrClosing)
		}

		// Pipes too: a reader on an empty pipe, a writer on a full one.
		r, _ := newPipe(t)
		_, w := newPipe(t)
		dr, dw := open(t, p, r), openSettled(t, p, w)
		mustEAGAIN(t, dr)
		require.NoError(t, dw.Prepare(pollfd.ModeWrite))
		fillUntilEAGAIN(t, w)
		base = p.Stats()
		rdone, wdone := goWait(dr, pollfd.ModeRead), goWait(dw, pollfd.ModeWrite)
		waitParks(t, p, base, 2)
		dr.Unblock()
		dw.Unblock()
		require.ErrorIs(t, recvErr(t, rdone), pollfd.ErrClosing)
		require.ErrorIs(t, recvErr(t, wdone), pollfd.ErrClosing)
	})
}

// TestClose: Close requires Unblock, succeeds once, and a second Close
// reports ErrClosing. Unblock leaves no parked waiter behind, so Close
// right after it succeeds even before the woken waiters have run (the
// ErrWaiters refusal cannot be reached through the API).
func TestClose(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, _ := newPipe(t)
		d, err := p.Open(r)
		require.NoError(t, err)
		require.Equal(t, int64(1), p.Stats().Registered)
		require.ErrorIs(t, d.Close(), pollfd.ErrNotClosing)
		require.Equal(t, int64(1), p.Stats().Registered)
		require.NoError(t, d.Prepare(pollfd.ModeRead), "a refused Close changes nothing")
		d.Unblock()
		require.NoError(t, d.Close())
		require.Zero(t, p.Stats().Registered)
		require.ErrorIs(t, d.Close(), pollfd.ErrClosing)
		require.Zero(t, p.Stats().Registered)

		a, _ := newSocketpair(t)
		d2, reader, writer := parkBoth(t, p, a)
		d2.Unblock()
		require.NoError(t, d2.Close())
		require.ErrorIs(t, recvErr(t, reader), pollfd.ErrClosing)
		require.ErrorIs(t, recvErr(t, writer), pollfd.ErrClosing)
		require.Zero(t, p.Stats().Registered)
	})
}

// TestPollerCloseBusy: a poller with registered descriptors refuses to
// close, and keeps working.
func TestPollerCloseBusy(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)
		require.ErrorIs(t, p.Close(), pollfd.ErrPollerBusy)
		done, _ := parkedRead(t, p, d)
		_, err := unix.Write(w, []byte("k"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, done))
		require.ErrorIs(t, p.Close(), pollfd.ErrPollerBusy)
		closeDesc(t, d)
		// testutil.NewPoller's cleanup now closes it.
	})
}

// TestDoubleWait: a second concurrent Wait on one gate is refused with
// ErrDoubleWait, without disturbing the first; the other gate is free.
func TestDoubleWait(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		a, b := newSocketpair(t)
		d := openSettled(t, p, a)
		reader, base := parkedRead(t, p, d)
		require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrDoubleWait)

		require.NoError(t, d.Prepare(pollfd.ModeWrite))
		fillUntilEAGAIN(t, a)
		writer := goWait(d, pollfd.ModeWrite)
		waitParks(t, p, base, 2)
		require.ErrorIs(t, d.Wait(pollfd.ModeWrite), pollfd.ErrDoubleWait)

		// The first reader is still parked, and still gets its data.
		_, err := unix.Write(b, []byte("r"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, reader))
		requireParked(t, writer, 20*time.Millisecond, "nothing made room")
		d.Unblock()
		require.ErrorIs(t, recvErr(t, writer), pollfd.ErrClosing)
	})
}

// TestDoubleWaitWhileWoken: a second Wait that comes while the first
// waiter is woken but has not run yet is refused too. It was let park: the
// first one's resume then took it for its own park and withdrew it, and
// one of the two slept on with nothing left to wake it, Unblock and Close
// included. The deadline wakes the first without Ready and is moved back
// before it runs: with GOMAXPROCS 1 the second Wait, started last, runs
// first (the scheduler's runnext), or it finds the first parked again.
func TestDoubleWaitWhileWoken(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		a, _ := newSocketpair(t)
		d := openSettled(t, p, a)
		first, _ := parkedRead(t, p, d)
		require.NoError(t, d.SetDeadline(time.Now().Add(-time.Second), pollfd.ModeRead)) // wakes it
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
		second := goWait(d, pollfd.ModeRead)
		require.ErrorIs(t, recvErr(t, second), pollfd.ErrDoubleWait)

		// The first parks again, and Unblock still reaches it.
		requireParked(t, first, 20*time.Millisecond, "no edge, no deadline")
		d.Unblock()
		require.ErrorIs(t, recvErr(t, first), pollfd.ErrClosing)
	})
}

// TestWaitChecksErrorsFirst: Wait begins with the error check, as the
// runtime's pollWait does (netpollcheckerr before netpollblock): a Ready
// left on a gate does not let a Wait on a closing descriptor, or one whose
// deadline has expired, return nil. Only a Ready that arrives once Wait has
// passed that check (while it parks) beats an error.
func TestWaitChecksErrorsFirst(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		readyDesc := func(t *testing.T) *pollfd.Desc {
			r, w := newPipe(t)
			d := open(t, p, r)
			pendingEdge(t, p, d, w, "x") // Ready is set, nobody consumed it
			return d
		}
		t.Run("closing", func(t *testing.T) {
			d := readyDesc(t)
			d.Unblock()
			require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrClosing)
		})
		t.Run("expired", func(t *testing.T) {
			d := readyDesc(t)
			require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
			require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
			require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
			// The Ready is still there for the first Wait under a new deadline.
			require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))
			base := p.Stats()
			require.NoError(t, d.Wait(pollfd.ModeRead))
			require.Equal(t, base.Parks, p.Stats().Parks)
		})
	})
}

// TestKickHook: the fault layer's wake-up, reached through
// internal/pollhook, wakes a parked waiter as an edge would and counts it
// apart (WakeupsKick, not an event); with no waiter the edge is kept for
// the next Wait.
func TestKickHook(t *testing.T) {
	kick, ok := pollhook.Kick.(func(*pollfd.Desc, pollfd.Mode))
	require.True(t, ok, "pollfd sets pollhook.Kick to a func(*Desc, Mode): %T", pollhook.Kick)
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, _ := newPipe(t)
		d := open(t, p, r)
		ch, base := parkedRead(t, p, d)
		kick(d, pollfd.ModeRead)
		require.NoError(t, recvErr(t, ch))
		st := p.Stats()
		require.Equal(t, base.WakeupsKick+1, st.WakeupsKick)
		require.Equal(t, base.Events, st.Events, "a kick is not an event")

		mustEAGAIN(t, d)
		kick(d, pollfd.ModeRead) // nobody waits: kept
		require.NoError(t, d.Wait(pollfd.ModeRead))
		require.Equal(t, st.WakeupsKick, p.Stats().WakeupsKick, "no waiter woken")
	})
}
