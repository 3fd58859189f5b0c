//go:build linux

package poll

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gatenet/gatenet/internal/pollhook"
)

// fdMutex guards the lifetime of a file descriptor and serializes its
// readers and writers. It has the same semantics as the standard
// library's internal/poll.fdMutex.
//
// Layout of state, from the least significant bit:
//
//	bit 0       closed: set once by increfAndClose; every later lock fails
//	bit 1       read lock held
//	bit 2       write lock held
//	bits 3-22   references held (misc + read + write + close)
//	bits 23-42  goroutines waiting for the read lock
//	bits 43-62  goroutines waiting for the write lock
//	bit 63      destroyed: set once the descriptor is closed for good
//	            (markDestroyed), for a Close waiting for it (waitDestroyed)
//
// Usage: Read does rwlock(true)/rwunlock(true); Write does
// rwlock(false)/rwunlock(false); other operations (setsockopt,
// deadlines, ...) do incref/decref so the descriptor cannot be closed
// under them; Close does increfAndClose/decref. Whichever call drops
// the last reference after close returns true, and its caller must
// then destroy the descriptor.
//
// The zero value is an open, unlocked mutex. It must not be copied.
type fdMutex struct {
	state atomic.Uint64
	// semas holds the read and write waiters' semaphores, made on first
	// contention: most descriptors never need them, and an idle
	// connection's size matters.
	semas atomic.Pointer[fdSemas]
}

const (
	fdmClosed  = 1 << 0
	fdmRLock   = 1 << 1
	fdmWLock   = 1 << 2
	fdmRef     = 1 << 3
	fdmRefMask = (1<<20 - 1) << 3
	fdmRWait   = 1 << 23
	fdmRMask   = (1<<20 - 1) << 23
	fdmWWait   = 1 << 43
	fdmWMask   = (1<<20 - 1) << 43

	fdmDestroyed = 1 << 63
)

const (
	fdMutexOverflowMsg     = "too many concurrent operations on a single file or socket (max 1048575)"
	fdMutexInconsistentMsg = "inconsistent fdMutex"
)

// incref takes a plain reference for an operation that needs the
// descriptor to stay valid but not exclusive. It reports false if the
// mutex is closed.
func (mu *fdMutex) incref() bool {
	for {
		old := mu.state.Load()
		if old&fdmClosed != 0 {
			return false
		}
		next := old + fdmRef
		if next&fdmRefMask == 0 {
			panic(fdMutexOverflowMsg)
		}
		if mu.state.CompareAndSwap(old, next) {
			return true
		}
	}
}

// increfAndClose marks the mutex closed, takes a reference for the
// closer and wakes every queued reader and writer; they then observe
// the closed bit and fail. It reports false if already closed.
func (mu *fdMutex) increfAndClose() bool {
	for {
		old := mu.state.Load()
		if old&fdmClosed != 0 {
			return false
		}
		next := (old | fdmClosed) + fdmRef
		if next&fdmRefMask == 0 {
			panic(fdMutexOverflowMsg)
		}
		// Waiter counts are cleared here; each wakeup below accounts
		// for one of them.
		next &^= fdmRMask | fdmWMask
		if mu.state.CompareAndSwap(old, next) {
			for n := (old & fdmRMask) / fdmRWait; n > 0; n-- {
				mu.sema(true).release()
			}
			for n := (old & fdmWMask) / fdmWWait; n > 0; n-- {
				mu.sema(false).release()
			}
			return true
		}
	}
}

// decref drops a reference taken by incref or increfAndClose. It
// reports true if the mutex is closed and this was the last reference.
func (mu *fdMutex) decref() bool {
	for {
		old := mu.state.Load()
		if old&fdmRefMask == 0 {
			panic(fdMutexInconsistentMsg)
		}
		next := old - fdmRef
		if mu.state.CompareAndSwap(old, next) {
			return next&(fdmClosed|fdmRefMask) == fdmClosed
		}
	}
}

// rwlock takes a reference and the read (read=true) or write lock,
// blocking while another goroutine holds it; this serializes Reads
// with Reads and Writes with Writes. It reports false if the mutex is
// or becomes closed, in which case nothing is held.
func (mu *fdMutex) rwlock(read bool) bool {
	ok, _ := mu.rwlockContext(context.Background(), read, false)
	return ok
}

// rwlockContext is rwlock whose wait for the lock also ends when ctx is
// done: it then returns ctx's error, holding nothing. A free lock is
// taken whatever ctx says, as a read with a done context still returns
// the data that is there; a held one with ctx done fails at once.
//
// A waiter that gives up leaves the queue without a token: the waiter
// counts and the semaphore's tokens always add up to the goroutines in
// the queue (each unlock and Close moves counts to tokens, one for one),
// so it removes one count if any is left; if none is, a token is on its
// way for it (an unlock took its count and is about to release), and it
// takes that token. Either way no other waiter loses its wake-up.
//
// durable makes a wait count as durably blocked in a testing/synctest
// bubble (fdSema): for a descriptor paired in the waiter's bubble, whose
// lock only the bubble's goroutines hold.
func (mu *fdMutex) rwlockContext(ctx context.Context, read, durable bool) (bool, error) {
	bit, wait, mask := mu.side(read)
	for {
		old := mu.state.Load()
		if old&fdmClosed != 0 {
			return false, nil
		}
		var next uint64
		if old&bit == 0 {
			next = (old | bit) + fdmRef
			if next&fdmRefMask == 0 {
				panic(fdMutexOverflowMsg)
			}
		} else {
			if ctx.Done() != nil {
				if err := ctx.Err(); err != nil {
					return false, err
				}
			}
			next = old + wait
			if next&mask == 0 {
				panic(fdMutexOverflowMsg)
			}
		}
		if mu.state.CompareAndSwap(old, next) {
			if old&bit == 0 {
				return true, nil
			}
			// Whoever wakes us has already removed our waiter count.
			if mu.sema(read).acquireContext(ctx, durable) {
				continue
			}
			if !mu.leaveQueue(wait, mask) {
				mu.sema(read).acquireContext(context.Background(), durable)
			}
			return false, ctx.Err()
		}
	}
}

// leaveQueue removes one waiter count (wait, within mask), if any is
// left, for a waiter whose context ended its wait.
func (mu *fdMutex) leaveQueue(wait, mask uint64) bool {
	for {
		old := mu.state.Load()
		if old&mask == 0 {
			return false
		}
		if mu.state.CompareAndSwap(old, old-wait) {
			return true
		}
	}
}

// rwunlock releases the lock taken by rwlock(read) and its reference,
// handing off to one queued waiter if any. It reports true if the
// mutex is closed and this was the last reference.
func (mu *fdMutex) rwunlock(read bool) bool {
	bit, wait, mask := mu.side(read)
	for {
		old := mu.state.Load()
		if old&bit == 0 || old&fdmRefMask == 0 {
			panic(fdMutexInconsistentMsg)
		}
		next := (old &^ bit) - fdmRef
		if old&mask != 0 {
			next -= wait
		}
		if mu.state.CompareAndSwap(old, next) {
			if old&mask != 0 {
				mu.sema(read).release()
			}
			return next&(fdmClosed|fdmRefMask) == fdmClosed
		}
	}
}

// side returns the lock bit, waiter unit and waiter mask for the read or
// write half of mu.
func (mu *fdMutex) side(read bool) (bit, wait, mask uint64) {
	if read {
		return fdmRLock, fdmRWait, fdmRMask
	}
	return fdmWLock, fdmWWait, fdmWMask
}

// fdSemas are the semaphores of the read lock's and the write lock's
// waiters, and of a Close waiting for the destroy.
type fdSemas struct{ r, w, destroyed fdSema }

// sema returns the read or write semaphore, making the set on first use
// (by a waiter or by the releaser that will wake it, whichever is first).
func (mu *fdMutex) sema(read bool) *fdSema {
	s := mu.madeSemas()
	if read {
		return &s.r
	}
	return &s.w
}

func (mu *fdMutex) madeSemas() *fdSemas {
	s := mu.semas.Load()
	if s == nil {
		mu.semas.CompareAndSwap(nil, new(fdSemas))
		s = mu.semas.Load()
	}
	return s
}

// markDestroyed records that the descriptor is closed for good (called
// once, by whoever dropped the last reference, after close(2)) and wakes
// a Close waiting for that.
func (mu *fdMutex) markDestroyed() {
	mu.state.Or(fdmDestroyed)
	if s := mu.semas.Load(); s != nil {
		s.destroyed.release()
	}
}

// waitDestroyed returns once markDestroyed has run. Close, when its own
// reference was not the last (a Read still in its system call), waits
// here. The two sides store, then load what the other stores (the bit;
// the semaphores), so at least one of them sees the other: the waiter
// finds the bit set, or markDestroyed finds the semaphores and releases.
// Most Closes drop the last reference themselves and never make them.
func (mu *fdMutex) waitDestroyed() {
	if mu.state.Load()&fdmDestroyed != 0 {
		return
	}
	s := mu.madeSemas()
	if mu.state.Load()&fdmDestroyed != 0 {
		return
	}
	s.destroyed.acquire()
}

// fdSema is a counting semaphore standing in for the runtime's
// semacquire/semrelease, which are not reachable outside the standard
// library. fdMutex touches it only on the contended path. The zero value
// has count 0.
//
// Its waiters queue in order, each parked on a semaphore of its own from
// pollfd (pollhook.NewSema), and release hands the count straight to the
// first. Not a sync.Cond: a lock's holder and its waiter may be in
// different testing/synctest bubbles (a conn shared with a goroutine
// outside), and a Cond woken from outside its waiter's bubble is a fatal
// error, where pollfd's semaphores may be woken from anywhere. A lock
// waiter parks durably, as a Cond's does, so that a bubble whose
// goroutines contend for a conn still lets its clock move, but only on a
// descriptor paired in that bubble (its holder is the bubble's too); any
// other waiter, and Close's wait for the destroy (a system call in
// flight, which returns on its own), parks plainly, as on net's locks.
type fdSema struct {
	mu      sync.Mutex
	n       uint32      // counts no waiter has taken
	waiters []*fdWaiter // in arrival order
}

// fdWaiter is one goroutine waiting on an fdSema.
type fdWaiter struct {
	park, wake func()
	granted    bool // release gave it a count; under the fdSema's mu
}

var newSema = pollhook.NewSema.(func(durable bool) (park, wake func()))

// watchDone keeps a bubble from idling on a durable park while its
// context may be cancelled from outside (pollfd/bubble_ctx.go).
var watchDone = pollhook.WatchDone.(func(done <-chan struct{}, wake func()) (stop func()))

// acquire blocks until the count is positive, then decrements it,
// parking plainly.
func (s *fdSema) acquire() { s.acquireContext(context.Background(), false) }

// acquireContext is acquire that also returns when ctx is done: it
// reports whether it took one. A count already there, or handed over
// before the wait ends, is taken even if ctx is done. durable: the park
// counts as durably blocked in a synctest bubble.
func (s *fdSema) acquireContext(ctx context.Context, durable bool) bool {
	s.mu.Lock()
	if s.n > 0 {
		s.n--
		s.mu.Unlock()
		return true
	}
	w := new(fdWaiter)
	w.park, w.wake = newSema(durable)
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	stop := func() bool { return false }
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, w.wake)
	}
	if durable {
		if stopWatch := watchDone(ctx.Done(), w.wake); stopWatch != nil {
			defer stopWatch()
		}
	}
	for {
		w.park()
		s.mu.Lock()
		if w.granted {
			s.mu.Unlock()
			stop()
			return true
		}
		if ctx.Err() != nil {
			s.waiters = slices.DeleteFunc(s.waiters, func(x *fdWaiter) bool { return x == w })
			s.mu.Unlock()
			return false
		}
		s.mu.Unlock() // a wake neither gave (a late one of the context's): wait on
	}
}

// release hands one count to the first waiter, or keeps it.
func (s *fdSema) release() {
	s.mu.Lock()
	if len(s.waiters) == 0 {
		s.n++
		s.mu.Unlock()
		return
	}
	w := s.waiters[0]
	s.waiters[0] = nil
	s.waiters = s.waiters[1:]
	w.granted = true
	s.mu.Unlock()
	w.wake()
}
