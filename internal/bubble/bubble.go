// Package bubble tells a goroutine of a testing/synctest bubble from one
// outside every bubble, and starts goroutines outside them. A bubble's
// clock moves only while every goroutine in it is durably blocked; a
// goroutine that waits on the kernel never is, so one that must wait
// there while the bubble goes on (a drain loop, a watcher of a child
// process's Start) has to run outside it.
package bubble

import (
	"runtime"
	"time"
)

// In reports whether the calling goroutine is in a synctest bubble:
// there, and only there, time.Now carries no monotonic clock reading (the
// runtime's fake clock has none), and Round(0), which strips it, changes
// nothing.
func In() bool {
	return IsFakeTime(time.Now())
}

// IsFakeTime reports whether now, a time.Now result, came from a bubble's
// clock.
func IsFakeTime(now time.Time) bool { return now == now.Round(0) }

// GoOutside runs f on a new goroutine outside every bubble. A goroutine
// inherits its creator's bubble, so the goroutine is started by the
// runtime's cleanup goroutine, which is in none: f is handed to a cleanup
// of an object made unreachable here, and a garbage collection queues it.
// f therefore starts shortly after, not before, GoOutside returns; a
// caller that must know it started waits for a sign of it (an atomic, not
// a channel of the bubble, which a goroutine outside may not use).
func GoOutside(f func()) {
	hand := &struct{ f func() }{f} // holds a pointer: not in a tiny block, which may never be collected alone
	runtime.AddCleanup(hand, func(f func()) { go f() }, f)
	runtime.GC() // hand is dead from here on
}
