//go:build linux

package poll

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rwlockContext: a queued locker whose context ends leaves the queue, and
// no other locker loses its wake-up for it.

func TestFdMutexContextFreeLockIgnoresDoneContext(t *testing.T) {
	var mu fdMutex
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ok, err := mu.rwlockContext(ctx, true, false)
	require.NoError(t, err)
	require.True(t, ok, "a free lock is taken whatever the context")
	// Held: a done context fails at once, queueing nothing.
	ok, err = mu.rwlockContext(ctx, true, false)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, ok)
	require.Equal(t, uint64(fdmRLock|fdmRef), mu.state.Load())
	require.False(t, mu.rwunlock(true))
	require.Zero(t, mu.state.Load())
}

func TestFdMutexContextLeavesQueue(t *testing.T) {
	for _, read := range []bool{true, false} {
		_, wait, mask := (&fdMutex{}).side(read)
		var mu fdMutex
		require.True(t, mu.rwlock(read))
		// One plain locker and one with a context queue behind the holder.
		plain := make(chan bool, 1)
		go func() { plain <- mu.rwlock(read) }()
		waitFdMutexState(t, &mu, "plain locker queued", func(s uint64) bool { return s&mask == wait })
		ctx, cancel := context.WithCancel(context.Background())
		withCtx := make(chan error, 1)
		go func() {
			ok, err := mu.rwlockContext(ctx, read, false)
			if ok {
				err = nil // reported below: it must not have the lock
			}
			withCtx <- err
		}()
		waitFdMutexState(t, &mu, "two lockers queued", func(s uint64) bool { return s&mask == 2*wait })
		cancel()
		select {
		case err := <-withCtx:
			require.ErrorIs(t, err, context.Canceled)
		case <-time.After(fdMutexWatchdog):
			t.Fatal("watchdog: the canceled locker stayed queued")
		}
		require.Equal(t, wait, mu.state.Load()&mask, "the canceled locker took its count out")
		// The plain locker still gets the lock at the unlock.
		require.False(t, mu.rwunlock(read))
		require.True(t, recvFdMutex(t, plain))
		require.False(t, mu.rwunlock(read))
		require.Zero(t, mu.state.Load())
	}
}

// TestFdMutexContextStress mixes plain lockers and lockers whose contexts
// end while they hold or wait, with a close at the end: every goroutine
// returns, the lock stays exclusive (-race), and no count is left over.
func TestFdMutexContextStress(t *testing.T) {
	const (
		goroutines = 8
		iters      = 2000
	)
	for _, read := range []bool{true, false} {
		var (
			mu      fdMutex
			counter int // not atomic: -race checks exclusion
			wg      sync.WaitGroup
			mu2     sync.Mutex
			gaveUp  int
		)
		for g := range goroutines {
			wg.Go(func() {
				for i := range iters {
					var ok bool
					if (g+i)%2 == 0 {
						ok = mu.rwlock(read)
					} else {
						ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Microsecond)
						var err error
						ok, err = mu.rwlockContext(ctx, read, false)
						cancel()
						if err != nil {
							mu2.Lock()
							gaveUp++
							mu2.Unlock()
							continue
						}
					}
					if !ok {
						t.Error("rwlock failed on an open mutex")
						return
					}
					counter++
					if mu.rwunlock(read) {
						t.Error("rwunlock reported the last reference of an open mutex")
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(6 * fdMutexWatchdog):
			t.Fatalf("watchdog: lockers stuck (state %#x)", mu.state.Load())
		}
		require.Equal(t, goroutines*iters, counter+gaveUp)
		require.Zero(t, mu.state.Load(), "no lock, reference or waiter count left")
		t.Logf("read=%v: %d of %d lock calls gave up", read, gaveUp, goroutines*iters)
	}
}

func TestFdMutexContextCloseWakesQueued(t *testing.T) {
	var mu fdMutex
	require.True(t, mu.rwlock(true))
	got := make(chan error, 1)
	go func() {
		ok, err := mu.rwlockContext(context.Background(), true, false)
		if ok {
			err = context.Canceled // must not happen: reported below
		}
		got <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got2 := make(chan bool, 1)
	go func() { ok, _ := mu.rwlockContext(ctx, true, false); got2 <- ok }()
	waitFdMutexState(t, &mu, "two lockers queued", func(s uint64) bool { return s&fdmRMask == 2*fdmRWait })
	require.True(t, mu.increfAndClose())
	require.NoError(t, <-got, "closed: (false, nil)")
	require.False(t, recvFdMutex(t, got2))
	require.Equal(t, uint64(fdmClosed|fdmRLock|2*fdmRef), mu.state.Load())
}

// TestFdMutexContextTakesTokenOnItsWay: a locker whose context ends after
// an unlock took its count, but before that unlock's token came, waits for
// the token and takes it: left in the semaphore, it would wake a later
// locker that holds no count, and the counts would no longer add up.
func TestFdMutexContextTakesTokenOnItsWay(t *testing.T) {
	var mu fdMutex
	require.True(t, mu.rwlock(true))
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		ok, err := mu.rwlockContext(ctx, true, false)
		if ok {
			err = nil // reported below: it must not have the lock
		}
		got <- err
	}()
	waitFdMutexState(t, &mu, "locker queued", func(s uint64) bool { return s&fdmRMask == fdmRWait })
	// rwunlock's state change, without its release (yet).
	mu.state.Add(^uint64(fdmRLock + fdmRef + fdmRWait - 1))
	require.Zero(t, mu.state.Load())
	cancel()
	select {
	case err := <-got:
		t.Fatalf("returned before the token came: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	mu.sema(true).release()
	select {
	case err := <-got:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(fdMutexWatchdog):
		t.Fatal("watchdog: the canceled locker never took its token")
	}
	s := mu.sema(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Zero(t, s.n, "no token left over")
}
