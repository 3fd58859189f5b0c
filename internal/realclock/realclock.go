// Package realclock reads the clock a testing/synctest bubble does not
// fake. In a bubble time.Now and the runtime's timers run on the bubble's
// clock, which stands still until every goroutine of the bubble is
// durably blocked; the fault layer's delays and the real-clock slots of
// pollfd's non-durable parks need the machine's monotonic clock there.
package realclock

import (
	"time"
	_ "unsafe" // go:linkname
)

// nanotime is the runtime's monotonic clock (CLOCK_MONOTONIC through the
// vDSO where the kernel offers one). The runtime exports it for linkname
// and promises to keep its signature (go.dev/issue/67401). A bubble's fake
// time lives above it, in time.Now and time.runtimeNano, which is why it
// is used here rather than time.Since of a start time.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Nanotime is the machine's monotonic clock in nanoseconds, in a bubble
// too: only differences between two readings mean anything. It costs what
// time.Now does outside a bubble (about 30 ns), where clock_gettime(2) as a
// system call costs a system call (over a microsecond on a virtual machine).
func Nanotime() int64 { return nanotime() }

// Now is Nanotime as a time.Time, for code that measures with time.Time's
// methods: its wall reading is meaningless, its differences are real.
func Now() time.Time { return time.Unix(0, nanotime()) }
