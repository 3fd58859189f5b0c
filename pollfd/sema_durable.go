//go:build linux

package pollfd

// The durable park's semaphore (bubble.go): the same protocol as the
// plain park's (sema_runtime.go), on the runtime's gopark and goready,
// with the wait reason sync.Cond.Wait has. A synctest bubble counts a
// goroutine parked with that reason as durably blocked, so its clock can
// move, while goready, unlike a channel of the bubble, may come from any
// goroutine: a Close or a deadline set outside the bubble, or I/O from
// another bubble, wakes the park instead of crashing the process. Race
// builds use it too: its commit runs on the system stack, where the race
// detector's atomics would crash, so it makes its compare-and-swap
// without them (casNoRace).

import (
	"sync/atomic"
	"unsafe"

	"github.com/gatenet/gatenet/internal/pollhook"
)

//go:linkname gopark runtime.gopark
func gopark(unlockf func(gp uintptr, state unsafe.Pointer) bool, state unsafe.Pointer, reason uint8, traceReason uint8, traceskip int)

//go:linkname goready runtime.goready
func goready(gp uintptr, traceskip int)

// The runtime's waitReasonSyncCondWait and traceBlockCondWait, by number
// (TestDurableParkReportsDurable checks the first).
const (
	waitReasonSyncCondWait = 21
	traceBlockCondWait     = 4
)

// semaToken is a wake not yet taken, in either semaphore's state.
const semaToken = 1

// durableSema is a binary semaphore for one durable waiter: 0, semaToken,
// or the parked goroutine.
type durableSema struct {
	state uintptr
}

// park takes the token, sleeping until wake gives it.
func (s *durableSema) park() {
	for !atomic.CompareAndSwapUintptr(&s.state, semaToken, 0) {
		gopark(commitDurable, unsafe.Pointer(&s.state), waitReasonSyncCondWait, traceBlockCondWait, 1)
	}
}

// commitDurable is gopark's unlock function (commitPark's twin). norace:
// the race detector's function-entry hook would crash on the system stack.
//
//go:nosplit
//go:norace
func commitDurable(gp uintptr, state unsafe.Pointer) bool {
	return casNoRace((*uintptr)(state), 0, gp)
}

// wake gives the token, readying the parked goroutine if there is one.
func (s *durableSema) wake() {
	if old := atomic.SwapUintptr(&s.state, semaToken); old > semaToken {
		goready(old, 1)
	}
}

func init() { pollhook.NewSema = newSema }

// newSema is pollhook.NewSema: a durableSema for one waiter, or a plain
// one (newPlainSema). Both take any number of wakes.
func newSema(durable bool) (park, wake func()) {
	if durable {
		s := new(durableSema)
		return s.park, s.wake
	}
	return newPlainSema()
}
