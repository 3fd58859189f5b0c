//go:build linux

package poll

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fdMutexWatchdog bounds every wait in these tests; it only fires if
// the mutex is broken (deadlock or lost wakeup), never as a timing assert.
const fdMutexWatchdog = 10 * time.Second

// waitFdMutexState polls until cond holds for mu's state word.
func waitFdMutexState(t *testing.T, mu *fdMutex, what string, cond func(uint64) bool) {
	t.Helper()
	deadline := time.Now().Add(fdMutexWatchdog)
	for !cond(mu.state.Load()) {
		if time.Now().After(deadline) {
			t.Fatalf("watchdog: timed out waiting for %s (state %#x)", what, mu.state.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// recvFdMutex receives one value from ch or fails after the watchdog.
func recvFdMutex(t *testing.T, ch <-chan bool) bool {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(fdMutexWatchdog):
		t.Fatal("watchdog: goroutine still blocked")
		return false
	}
}

func TestFdMutexBasic(t *testing.T) {
	var mu fdMutex

	require.True(t, mu.incref())
	require.True(t, mu.incref())
	require.False(t, mu.decref(), "open mutex: decref never reports last")
	require.False(t, mu.decref())

	require.True(t, mu.rwlock(true))
	require.False(t, mu.rwunlock(true))
	require.True(t, mu.rwlock(false))
	require.False(t, mu.rwunlock(false))

	// A read lock and a write lock are independent and can be held together.
	require.True(t, mu.rwlock(true))
	require.True(t, mu.rwlock(false))
	require.True(t, mu.incref())
	require.Equal(t, uint64(fdmRLock|fdmWLock|3*fdmRef), mu.state.Load())
	require.False(t, mu.decref())
	require.False(t, mu.rwunlock(false))
	require.False(t, mu.rwunlock(true))
	require.Zero(t, mu.state.Load())
}

func TestFdMutexLastReference(t *testing.T) {
	t.Run("decref", func(t *testing.T) {
		var mu fdMutex
		require.True(t, mu.incref())
		require.True(t, mu.increfAndClose())
		require.False(t, mu.decref(), "closer's reference remains")
		require.True(t, mu.decref(), "last reference after close")
	})
	t.Run("closer-only", func(t *testing.T) {
		var mu fdMutex
		require.True(t, mu.increfAndClose())
		require.True(t, mu.decref(), "closer holds the only reference")
	})
	t.Run("rwunlock", func(t *testing.T) {
		for _, read := range []bool{true, false} {
			var mu fdMutex
			require.True(t, mu.rwlock(read))
			require.True(t, mu.increfAndClose())
			require.False(t, mu.decref(), "lock holder's reference remains")
			require.True(t, mu.rwunlock(read), "unlock drops the last reference")
		}
	})
}

// TestFdMutexWaitDestroyed: a Close whose reference was not the last
// waits for the destroy, whichever comes first — the destroy before the
// wait (no semaphores made), or the wait before the destroy (parked until
// it) — and in a race of the two, many times over, it never misses it
// (the watchdog catches a lost wake-up).
func TestFdMutexWaitDestroyed(t *testing.T) {
	t.Run("destroyed-first", func(t *testing.T) {
		var mu fdMutex
		mu.markDestroyed()
		mu.waitDestroyed()
		require.Nil(t, mu.semas.Load(), "no semaphores for an uncontended Close")
	})
	t.Run("wait-first", func(t *testing.T) {
		var mu fdMutex
		done := make(chan struct{})
		go func() { mu.waitDestroyed(); close(done) }()
		waitFdMutexState(t, &mu, "the waiter to make the semaphores", func(uint64) bool { return mu.semas.Load() != nil })
		select {
		case <-done:
			t.Fatal("waitDestroyed returned before markDestroyed")
		case <-time.After(20 * time.Millisecond): // a lower bound only
		}
		mu.markDestroyed()
		select {
		case <-done:
		case <-time.After(fdMutexWatchdog):
			t.Fatal("waitDestroyed missed markDestroyed")
		}
	})
	t.Run("race", func(t *testing.T) {
		for range 2000 {
			var mu fdMutex
			done := make(chan struct{})
			go func() { mu.waitDestroyed(); close(done) }()
			mu.markDestroyed()
			select {
			case <-done:
			case <-time.After(fdMutexWatchdog):
				t.Fatal("waitDestroyed missed markDestroyed")
			}
		}
	})
}

func TestFdMutexClose(t *testing.T) {
	var mu fdMutex
	require.True(t, mu.increfAndClose())
	require.False(t, mu.increfAndClose(), "second close must fail")
	require.False(t, mu.incref())
	require.False(t, mu.rwlock(true))
	require.False(t, mu.rwlock(false))
	// Failed calls must not have taken references.
	require.Equal(t, uint64(fdmClosed|fdmRef), mu.state.Load())
	require.True(t, mu.decref())
	require.Equal(t, uint64(fdmClosed), mu.state.Load())
}

func TestFdMutexCloseWakesQueuedLockers(t *testing.T) {
	for _, read := range []bool{true, false} {
		name := "write"
		lockBit, waitMask, waitUnit := uint64(fdmWLock), uint64(fdmWMask), uint64(fdmWWait)
		if read {
			name = "read"
			lockBit, waitMask, waitUnit = fdmRLock, fdmRMask, fdmRWait
		}
		t.Run(name, func(t *testing.T) {
			const n = 3
			var mu fdMutex
			require.True(t, mu.rwlock(read))

			results := make(chan bool, n)
			for range n {
				go func() { results <- mu.rwlock(read) }()
			}
			waitFdMutexState(t, &mu, "3 queued lockers", func(s uint64) bool {
				return s&waitMask == n*waitUnit
			})

			require.True(t, mu.increfAndClose())
			for range n {
				require.False(t, recvFdMutex(t, results), "woken locker must see close")
			}
			// Waiters are gone and took no references: holder + closer.
			require.Equal(t, fdmClosed|lockBit|2*fdmRef, mu.state.Load())
			require.False(t, mu.rwunlock(read))
			require.True(t, mu.decref())
		})
	}
}

func TestFdMutexUnlockHandsOff(t *testing.T) {
	for _, read := range []bool{true, false} {
		var mu fdMutex
		require.True(t, mu.rwlock(read))

		got := make(chan bool, 1)
		go func() { got <- mu.rwlock(read) }()
		waitFdMutexState(t, &mu, "queued locker", func(s uint64) bool {
			return s&(fdmRMask|fdmWMask) != 0
		})

		require.False(t, mu.rwunlock(read))
		require.True(t, recvFdMutex(t, got), "waiter must acquire after unlock")
		require.False(t, mu.rwunlock(read))
		require.Zero(t, mu.state.Load())
	}
}

func TestFdMutexSerializes(t *testing.T) {
	const (
		goroutines = 8
		iters      = 10000
	)
	for _, read := range []bool{true, false} {
		name := "write"
		if read {
			name = "read"
		}
		t.Run(name, func(t *testing.T) {
			var (
				mu      fdMutex
				counter int // deliberately not atomic: -race checks exclusion
				wg      sync.WaitGroup
				failed  = make(chan string, goroutines)
			)
			for range goroutines {
				wg.Go(func() {
					for range iters {
						if !mu.rwlock(read) {
							failed <- "rwlock failed on open mutex"
							return
						}
						counter++
						if mu.rwunlock(read) {
							failed <- "rwunlock reported last reference on open mutex"
							return
						}
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(fdMutexWatchdog * 6):
				t.Fatalf("watchdog: workers stuck (state %#x)", mu.state.Load())
			}
			close(failed)
			for msg := range failed {
				t.Error(msg)
			}
			require.Equal(t, goroutines*iters, counter)
			require.Zero(t, mu.state.Load())
		})
	}
}

func TestFdMutexPanics(t *testing.T) {
	t.Run("decref-unreferenced", func(t *testing.T) {
		var mu fdMutex
		require.PanicsWithValue(t, "inconsistent fdMutex", func() { mu.decref() })
	})
	t.Run("rwunlock-unlocked", func(t *testing.T) {
		var mu fdMutex
		require.PanicsWithValue(t, "inconsistent fdMutex", func() { mu.rwunlock(true) })
		require.PanicsWithValue(t, "inconsistent fdMutex", func() { mu.rwunlock(false) })
	})
	t.Run("rwunlock-other-side", func(t *testing.T) {
		var mu fdMutex
		require.True(t, mu.rwlock(true))
		require.PanicsWithValue(t, "inconsistent fdMutex", func() { mu.rwunlock(false) })
	})
	t.Run("rwunlock-plain-ref", func(t *testing.T) {
		var mu fdMutex
		require.True(t, mu.incref())
		require.Panics(t, func() { mu.rwunlock(true) })
	})
	t.Run("ref-overflow", func(t *testing.T) {
		const msg = "too many concurrent operations on a single file or socket (max 1048575)"
		var mu fdMutex
		mu.state.Store(fdmRefMask)
		require.PanicsWithValue(t, msg, func() { mu.incref() })
		require.PanicsWithValue(t, msg, func() { mu.rwlock(true) })
		require.PanicsWithValue(t, msg, func() { mu.increfAndClose() })
	})
	t.Run("waiter-overflow", func(t *testing.T) {
		const msg = "too many concurrent operations on a single file or socket (max 1048575)"
		var mu fdMutex
		mu.state.Store(fdmRLock | fdmRef | fdmRMask)
		require.PanicsWithValue(t, msg, func() { mu.rwlock(true) })
	})
}

func TestFdMutexAllocs(t *testing.T) {
	var mu fdMutex
	for _, read := range []bool{true, false} {
		allocs := testing.AllocsPerRun(1000, func() {
			mu.rwlock(read)
			mu.rwunlock(read)
		})
		require.Zero(t, allocs, "rwlock/rwunlock(%v)", read)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		mu.incref()
		mu.decref()
	})
	require.Zero(t, allocs, "incref/decref")
}
