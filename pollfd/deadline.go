//go:build linux

package pollfd

// Deadlines, with the runtime's semantics (netpoll.go: pollSetDeadline and
// netpolldeadlineimpl):
//
//   - a time in the future arms a timer; the zero time clears; a time in
//     the past (or exactly now) expires at once;
//   - expiry is sticky: every Prepare and Wait in that direction fails with
//     ErrTimeout until the next SetDeadline for it, even when data is
//     already waiting in the kernel;
//   - a deadline set in the past wakes the current waiter, without
//     readiness, and it returns ErrTimeout; a deadline moved into the future
//     or cleared wakes nobody: the waiter keeps waiting under the new rule;
//   - read and write deadlines are independent; ModeReadWrite sets both,
//     and deadlines of the same instant expire together, as the runtime's
//     one timer for both does: whichever direction's timer fires first
//     expires the other too (deadlineFired).
//
// The deadline generation. Every SetDeadline, and Unblock, bumps the gate's
// timer's seq under mu. Arming the timer records armed = seq. When it fires,
// its callback takes mu and expires the gate only if armed == seq (no
// change since it was armed) and the deadline it served has passed. The
// second condition covers a callback that had already started when
// SetDeadline re-armed the same timer (time.Timer.Reset does not wait for a
// running callback): it sees the new, later deadline and does nothing. So a
// stale timer never expires a newer deadline, and a cleared one never fires.
//
// Each gate owns at most one timer, in a gateTimer made by its first
// deadline in the future and re-armed with Reset afterwards, so deadline
// churn (net/http sets one per request) allocates nothing after the first;
// a descriptor that never has one (an idle connection) carries a nil
// pointer, not the timer's state. Until a gateTimer exists no timer can be
// pending, so there is no generation to bump.
//
// Two clocks. A deadline set in a synctest bubble runs on the bubble's
// fake clock (time.AfterFunc made there is the bubble's, and fires in the
// bubble), one set outside on the real clock; a timer cannot move between
// them (the runtime throws when a goroutine outside the bubble resets or
// stops a bubble's timer). So a gate's timer remembers its clock (fake,
// and which bubble's), a deadline set on another clock gets a new timer,
// and a callback of a timer no longer the gate's is stale (timers). A
// durable park (bubble.go) needs its deadline on its own bubble's clock: a
// deadline set on another wakes it to park again as an ordinary wait.

import (
	"math"
	"time"

	"github.com/gatenet/gatenet/internal/realclock"

	"github.com/gatenet/gatenet/internal/bubble"
)

// gateTimer is a gate's deadline timer and its generation. Guarded by the
// Desc's mu.
type gateTimer struct {
	seq      uint32 // deadline generation (it never wraps within a timer's callback)
	armed    uint32 // seq the timer was last armed for
	deadline int64  // ns since clockBase on the timer's clock; 0: none
	timer    *time.Timer
	timers   uint32 // timers made for this gate; a callback of an earlier one is stale
	fake     bool   // timer runs on a synctest bubble's clock
	bubble   uint64 // that bubble (currentBubble), if fake
	// realDeadline is a fake deadline on the real clock (CLOCK_MONOTONIC
	// ns), for a park outside the bubble, which the bubble's clock does
	// not wait for (realClockSlotLocked).
	realDeadline int64
}

// cancel disarms the timer and moves the generation on, so a callback
// already running finds itself stale. Nil-safe: no gateTimer, no timer.
func (gt *gateTimer) cancel() {
	if gt == nil {
		return
	}
	gt.seq++
	gt.deadline = 0
	gt.stop()
}

// stop stops the timer. A bubble's timer can be stopped only from its
// bubble (the runtime throws otherwise): from outside, it is dropped
// instead, and its callback, when the bubble's clock gets there, is stale.
func (gt *gateTimer) stop() {
	switch {
	case gt.timer == nil:
	case gt.fake && currentBubble() != gt.bubble:
		gt.timer = nil
	default:
		gt.timer.Stop()
	}
}

// clockBase anchors the monotonic clock every deadline is measured on.
var clockBase = time.Now()

// nanotime is monotonic nanoseconds since clockBase: wall-clock jumps do not
// move a deadline. In a synctest bubble it is the bubble's fake clock's
// distance from clockBase, which only the bubble's timers compare with.
func nanotime() int64 { return int64(time.Since(clockBase)) }

// SetDeadline sets the deadline for mode (ModeRead, ModeWrite or
// ModeReadWrite). The zero time clears it. It mirrors pollSetDeadline; on a
// closing descriptor it changes nothing and returns ErrClosing.
func (d *Desc) SetDeadline(t time.Time, mode Mode) error {
	if d.unopened() {
		return errNotOpened
	}
	if mode != ModeRead && mode != ModeWrite && mode != ModeReadWrite {
		return ErrInvalidMode
	}
	wall := time.Now()
	var rel time.Duration // 0: clear; < 0: expired; > 0: arm
	if !t.IsZero() {
		rel = t.Sub(wall)
		if rel == 0 {
			rel = -1 // "now" must not read as "no deadline"
		}
	}
	now := int64(wall.Sub(clockBase))
	fake := bubble.IsFakeTime(wall)
	var bubbleID uint64
	if fake {
		bubbleID = currentBubble()
	}
	woke := 0
	d.mu.Lock()
	if d.is(descClosing) {
		d.mu.Unlock()
		return ErrClosing
	}
	if mode != ModeWrite {
		if d.setDeadlineLocked(&d.rg, rel, now, fake, bubbleID) {
			woke++
		}
	}
	if mode != ModeRead {
		if d.setDeadlineLocked(&d.wg, rel, now, fake, bubbleID) {
			woke++
		}
	}
	if woke > 0 { // counted under mu: the woken waiter sees it
		d.shard.stats.wakeupsDeadline.Add(uint64(woke))
	}
	d.mu.Unlock()
	return nil
}

// setDeadlineLocked applies one direction's new deadline and reports
// whether it woke a waiter; fake says the caller is in a synctest bubble
// (bubble, if currentBubble could tell), whose clock now is on. Called
// with mu held.
func (d *Desc) setDeadlineLocked(g *gate, rel time.Duration, now int64, fake bool, bubble uint64) bool {
	switch {
	case rel == 0:
		g.dl.cancel()
		g.expired = false
		return false
	case rel < 0:
		g.dl.cancel()
		g.expired = true
		d.writeExpiredLocked(g)
		return d.wakeLocked(g)
	}
	g.expired = false
	gt := g.dl
	if gt == nil {
		gt = new(gateTimer)
		g.dl = gt
	}
	gt.seq++ // re-armed below: Reset, not Stop first (one timer operation per churn)
	gt.deadline = now + int64(rel)
	if gt.deadline < now { // overflow
		gt.deadline = math.MaxInt64
	}
	gt.armed = gt.seq
	if gt.timer != nil && (gt.fake != fake || gt.bubble != bubble) {
		gt.stop() // a timer of another clock: a new one, made on the caller's
		gt.timer = nil
	}
	if gt.timer == nil {
		gt.timers++
		made := gt.timers
		gt.fake, gt.bubble = fake, bubble
		gt.timer = time.AfterFunc(rel, func() { d.deadlineFired(g, made) })
	} else {
		gt.timer.Reset(rel)
	}
	if fake {
		gt.realDeadline = realclock.Nanotime() + int64(rel)
	}
	if g.waiting && g.durable && (!fake || bubble != d.bubbleOf()) {
		d.wakeLocked(g) // its bubble could idle past this deadline: park again (bubble.go)
	}
	return false
}

// deadlineFired is the timer callback: netpolldeadlineimpl. made is the
// timer's number among the gate's timers.
func (d *Desc) deadlineFired(g *gate, made uint32) {
	now := nanotime()
	d.mu.Lock()
	gt := g.dl // made before the timer was
	if d.is(descClosing) || gt.timers != made || gt.armed != gt.seq || gt.deadline == 0 || now < gt.deadline {
		d.mu.Unlock() // stale: re-armed, cleared or unblocked since
		return
	}
	// Counted before the wake, so a waiter that returns ErrTimeout always
	// finds its timer in Stats.
	d.shard.stats.timerFires.Add(1)
	o := &d.wg
	if g == o {
		o = &d.rg
	}
	if ot := o.dl; ot != nil && ot.deadline == gt.deadline && ot.fake == gt.fake && ot.bubble == gt.bubble {
		// The other direction's deadline is the same instant on the same
		// clock: it expires now too, as the runtime's one timer for equal
		// read and write deadlines expires both (netpollDeadline). Its own
		// timer, when it fires, finds the deadline gone. A read that a
		// SetDeadline timed out is never followed by a write that it did
		// not.
		d.expireLocked(o)
	}
	d.expireLocked(g)
	d.mu.Unlock()
}

// expireLocked expires g's deadline and wakes its waiter. Called with mu
// held.
func (d *Desc) expireLocked(g *gate) {
	g.expired = true
	g.dl.deadline = 0
	d.writeExpiredLocked(g)
	if d.wakeLocked(g) {
		d.shard.stats.wakeupsDeadline.Add(1)
	}
}
