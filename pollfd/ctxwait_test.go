//go:build linux

package pollfd_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// countingCtx is a cancellable context that is not built on the standard
// library's (so context.AfterFunc goes through its AfterFunc method) and
// counts registrations and stops.
type countingCtx struct {
	mu         sync.Mutex
	done       chan struct{}
	err        error
	funcs      map[int]func()
	next       int
	registered int
	stopped    int
}

func newCountingCtx() *countingCtx {
	return &countingCtx{done: make(chan struct{}), funcs: map[int]func(){}}
}

func (c *countingCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *countingCtx) Done() <-chan struct{}       { return c.done }
func (c *countingCtx) Value(any) any               { return nil }
func (c *countingCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *countingCtx) AfterFunc(f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered++
	if c.funcs == nil {
		// Already cancelled: run f at once. (context.AfterFunc does not
		// get here: it checks Done first and runs f itself.)
		go f()
		return func() bool { return false }
	}
	id := c.next
	c.next++
	c.funcs[id] = f
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.funcs[id]; !ok {
			return false
		}
		delete(c.funcs, id)
		c.stopped++
		return true
	}
}

func (c *countingCtx) cancel() {
	c.mu.Lock()
	c.err = context.Canceled
	close(c.done)
	funcs := c.funcs
	c.funcs = nil
	c.mu.Unlock()
	for _, f := range funcs {
		go f()
	}
}

func (c *countingCtx) counts() (registered, stopped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.registered, c.stopped
}

// TestWaitContextRegistration: a gate waited on again and again with one
// context registers with it once (later waits reuse the registration), a
// different context replaces it (the old one stopped), Unblock stops what
// is left, so a long-lived context keeps nothing of closed descriptors;
// and the context still cancels a parked wait through its registration.
func TestWaitContextRegistration(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		const n = 8
		ctx := newCountingCtx()
		var ws [n]int
		var ds [n]*pollfd.Desc
		for i := range n {
			var r int
			r, ws[i] = newPipe(t)
			ds[i] = open(t, p, r)
		}
		// Five parked waits per descriptor, each woken by a byte.
		for range 5 {
			for i, d := range ds {
				ch, _ := parkedContext(t, p, d, ctx)
				wakeByByte(t, ch, d.Fd(), ws[i])
			}
		}
		waitUntil(t, "the registrations", func() bool {
			reg, _ := ctx.counts()
			return reg >= n
		})
		reg, stopped := ctx.counts()
		require.Equal(t, n, reg, "one registration per gate, reused by later waits")
		require.Zero(t, stopped)

		// Contexts one per call (a fresh one per wait) on a fresh gate: the
		// first registers; once it has served a single wait, the next ones
		// are not registered (the waits select), and they still cancel.
		var r4 int
		r4, ws[3] = newPipe(t) // a gate that has never had a registration
		ds[3] = open(t, p, r4)
		for i := range 4 {
			once := newCountingCtx()
			ch, _ := parkedContext(t, p, ds[3], once)
			if i == 0 { // registrations are made off the waiter's goroutine
				waitUntil(t, "the first registration", func() bool {
					reg, _ := once.counts()
					return reg == 1
				})
			}
			once.cancel()
			require.ErrorIs(t, recvErr(t, ch), context.Canceled)
			if i > 0 {
				reg, _ := once.counts()
				require.Zero(t, reg, "per-call contexts are not registered")
			}
		}

		// Another context on descriptor 0, whose registration has served
		// many waits, replaces it.
		other := newCountingCtx()
		for i := range 2 {
			ch, _ := parkedContext(t, p, ds[0], other)
			if i == 0 {
				wakeByByte(t, ch, ds[0].Fd(), ws[0])
				// The registration is made off the waiter's goroutine; a
				// cancel that overtook it would find context.AfterFunc
				// running the callback at once, never calling the
				// context's AfterFunc, and the count below would be 0.
				waitUntil(t, "the replacing registration", func() bool {
					reg, _ := other.counts()
					return reg == 1
				})
				continue
			}
			other.cancel()
			require.ErrorIs(t, recvErr(t, ch), context.Canceled)
		}
		reg, _ = other.counts()
		require.Equal(t, 1, reg, "registered once for its two waits")
		// Registrations are made and stopped off the waiter's goroutine.
		waitUntil(t, "the replaced registration to be stopped", func() bool {
			_, stopped := ctx.counts()
			return stopped == 1
		})

		// The counting context cancels a parked wait through its
		// registration.
		ch, _ := parkedContext(t, p, ds[1], ctx)
		ctx.cancel()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)

		// Unblock stops the rest (those cancel has not consumed): a new
		// context, waited with twice (woken by a byte, then parked).
		fresh := newCountingCtx()
		ch, _ = parkedContext(t, p, ds[2], fresh)
		wakeByByte(t, ch, ds[2].Fd(), ws[2])
		ch, _ = parkedContext(t, p, ds[2], fresh)
		ds[2].Unblock()
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrClosing)
		waitUntil(t, "Unblock to stop the registration", func() bool {
			reg, stopped := fresh.counts()
			return reg == 1 && stopped == 1
		})
	})
}

// TestWaitContextAllocs: once a gate is registered with a context, a
// cancellable wait that parks and is woken by an event allocates nothing.
func TestWaitContextAllocs(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.DefaultOptions())
	r, w := newPipe(t)
	d := open(t, p, r)
	ctx := newCountingCtx()
	defer ctx.cancel()
	kick := kicker(t, w)
	var buf [8]byte
	var failed error
	cycle := func() {
		if err := d.Prepare(pollfd.ModeRead); err != nil && failed == nil {
			failed = err
		}
		kick <- struct{}{}
		if err := d.WaitContext(ctx, pollfd.ModeRead); err != nil && failed == nil {
			failed = err
		}
		unix.Read(r, buf[:])
	}
	// The first wait that parks registers, on a goroutine of its own.
	waitUntil(t, "the registration", func() bool {
		cycle()
		reg, _ := ctx.counts()
		return reg == 1
	})
	base := p.Stats()
	allocs := testing.AllocsPerRun(200, cycle)
	require.NoError(t, failed)
	require.Positive(t, p.Stats().Parks-base.Parks, "the measured path never parked")
	require.Zero(t, allocs, "allocations per cancellable wake cycle")
}

func TestWaitContext(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		t.Run("Canceled", func(t *testing.T) {
			r, w := newPipe(t)
			d := open(t, p, r)
			ctx, cancel := context.WithCancel(context.Background())
			ch, _ := parkedContext(t, p, d, ctx)
			cancel()
			require.ErrorIs(t, recvErr(t, ch), context.Canceled)
			// The gate is clean: the next Wait parks until real data.
			parksUntilData(t, d, w)
		})
		t.Run("AlreadyDone", func(t *testing.T) {
			r, _ := newPipe(t)
			d := open(t, p, r)
			mustEAGAIN(t, d)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			base := p.Stats()
			require.ErrorIs(t, d.WaitContext(ctx, pollfd.ModeRead), context.Canceled)
			require.Equal(t, base.Parks, p.Stats().Parks, "a done context must not park")
		})
		t.Run("ErrorsFirst", func(t *testing.T) {
			r, _ := newPipe(t)
			d := open(t, p, r)
			mustEAGAIN(t, d)
			require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
			require.ErrorIs(t, d.WaitContext(context.Background(), pollfd.ModeRead), pollfd.ErrTimeout)
		})
		// Cancellation racing an event: whichever wins, no wake token is
		// left behind to wake a later Wait spuriously, and no edge is lost.
		t.Run("RaceWithEvent", func(t *testing.T) {
			testutil.Watchdog(t, patience*4)
			r, w := newPipe(t)
			d := open(t, p, r)
			var b [1]byte
			for i := 0; i < 500; i++ {
				mustEAGAIN(t, d)
				ctx, cancel := context.WithCancel(context.Background())
				ch := make(chan error, 1)
				go func() { ch <- d.WaitContext(ctx, pollfd.ModeRead) }()
				go cancel()
				_, err := unix.Write(w, []byte("y"))
				require.NoError(t, err)
				if err := recvErr(t, ch); err != nil {
					require.ErrorIs(t, err, context.Canceled)
				}
				// The byte is there, whoever won.
				n, err := unix.Read(r, b[:])
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			// And the gate still parks on an empty pipe, then wakes. An edge
			// for the last byte may be delivered after that byte was read
			// (a harmless spurious wake-up, as with the runtime's poller):
			// let it land before the Prepare that forgets it.
			time.Sleep(20 * time.Millisecond)
			parksUntilData(t, d, w)
		})
	})
}

// parksUntilData checks that the read gate of d (a pipe's read end whose
// write end is w) is clean: a Wait after a read that finds the pipe empty
// stays parked while nothing is written, and the next byte wakes it.
func parksUntilData(t *testing.T, d *pollfd.Desc, w int) {
	t.Helper()
	mustEAGAIN(t, d)
	wch := goWait(d, pollfd.ModeRead)
	requireParked(t, wch, 30*time.Millisecond, "no data was written")
	_, err := unix.Write(w, []byte("x"))
	require.NoError(t, err)
	require.NoError(t, recvErr(t, wch))
}
