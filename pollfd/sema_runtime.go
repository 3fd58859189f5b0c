//go:build linux && !race

package pollfd

// The park semaphore, built on the runtime's own park and ready (the
// functions its poller and channels use, which the runtime keeps for
// linkname: go.dev/issue/67401). A parked waiter costs no channel and no
// sudog (one per idle connection, for as long as it idles), and shows in
// goroutine dumps as "IO wait", as a goroutine parked in net does.
//
// The state is one word: 0 (nothing), semaToken (a wake not yet taken), or
// the parked goroutine. park commits to sleeping only by swapping 0 for
// itself in gopark's unlock function, which runs once the goroutine is off
// its thread and before anyone can ready it; wake swaps in the token and
// readies whatever goroutine it displaced. So a wake either lands before
// the commit (the commit fails, the goroutine runs on and takes the token)
// or after it (wake sees the goroutine and readies it): none is lost, and
// goready never meets a goroutine that is still running.
//
// The race detector cannot watch this (the unlock function runs on the
// system stack, where its atomics would crash it); race builds use a
// sync.Mutex instead (sema_race.go). The gate's protocol (gate.go) is the
// same over both, and is what the race tests check.

import (
	"sync/atomic"
	"unsafe"
)

// The runtime's waitReasonIOWait and traceBlockNet: what net's parked
// goroutines report (TestParkReportsIOWait checks the first).
const (
	waitReasonIOWait = 2
	traceBlockNet    = 2
)

// parkSema is a binary semaphore for one waiter: wake gives the token,
// park takes it, sleeping until there is one.
type parkSema struct {
	state uintptr
}

// prepare readies the semaphore for a park; called with the Desc's mu held.
func (s *parkSema) prepare() {}

// park takes the token, sleeping until wake gives it.
func (s *parkSema) park() {
	for !atomic.CompareAndSwapUintptr(&s.state, semaToken, 0) {
		gopark(commitPark, unsafe.Pointer(&s.state), waitReasonIOWait, traceBlockNet, 1)
	}
}

// commitPark is gopark's unlock function: it runs on the system stack, so
// it must not grow the stack, and reports whether the goroutine sleeps.
//
//go:nosplit
func commitPark(gp uintptr, state unsafe.Pointer) bool {
	return atomic.CompareAndSwapUintptr((*uintptr)(state), 0, gp)
}

// wake gives the token, readying the parked goroutine if there is one.
func (s *parkSema) wake() {
	if old := atomic.SwapUintptr(&s.state, semaToken); old > semaToken {
		goready(old, 1)
	}
}

// newPlainSema is newSema's plain semaphore: a parkSema, whose wake may
// come more than once (the swap keeps one token).
func newPlainSema() (park, wake func()) {
	s := new(parkSema)
	return s.park, s.wake
}
