//go:build linux

package pollfd

// A ReadyList's Next in a testing/synctest bubble (the top of ready.go has
// the protocol; bubble.go the rule for a Desc). A list made in a bubble
// records the Descs it watches; a Next of that bubble that finds the list
// empty sleeps durably while every one of them parks durably in the same
// bubble, so the bubble's clock can move (a context's timeout fires on
// it) and a report by one of its goroutines wakes the sleeper.

import (
	"context"
	"time"

	"github.com/gatenet/gatenet/internal/bubble"
)

// join and leave keep l.members, for a list made in a bubble: each Desc
// it watches, true unless it waits for room to write and that wait could
// not park durably (ready_write.go). Called with the Desc's mu held
// (Watch, unwatchLocked); they take l's.
func (l *ReadyList) join(d *Desc) {
	l.mu.Lock()
	if l.members == nil {
		l.members = make(map[*Desc]bool)
	}
	l.members[d] = true
	if d.bubbleOf() != l.bubble || !d.is(descDurable) {
		l.reparkDurablesLocked() // sleepers must not stay durable now
	}
	l.mu.Unlock()
}

func (l *ReadyList) leave(d *Desc) {
	l.mu.Lock()
	delete(l.members, d)
	l.mu.Unlock()
}

// memberNotDurable tells d's list, if any, that d no longer parks
// durably. Called with d's mu held (unpair, neverDurable).
func (d *Desc) memberNotDurable() {
	if w := d.watchLocked(); w != nil && w.list.bubble != 0 {
		w.list.mu.Lock()
		w.list.reparkDurablesLocked()
		w.list.mu.Unlock()
	}
}

// reparkDurablesLocked wakes every durable sleeper, to look again and
// sleep by the rule that holds now. Called with mu held.
func (l *ReadyList) reparkDurablesLocked() {
	for len(l.durables) > 0 {
		l.wakeOneLocked()
	}
}

// durableLocked reports whether a Next with ctx, which found l empty, may
// sleep durably: the caller is in l's bubble, every member parks durably
// there, and ctx's deadline, if any, is on a bubble's clock (one on the
// real clock could pass while the bubble idles). Called with mu held.
func (l *ReadyList) durableLocked(ctx context.Context) bool {
	if !durableParks || l.closed || !bubble.In() {
		return false
	}
	if t, ok := ctx.Deadline(); ok && !bubble.IsFakeTime(t) {
		return false
	}
	if currentBubble() != l.bubble {
		return false
	}
	for d, durableWrite := range l.members {
		if !durableWrite || !d.is(descDurable) || d.bubbleOf() != l.bubble {
			return false
		}
	}
	return true
}

// sleepDurably sleeps until a report, Close, a member that stops being
// durable, or ctx, and returns ctx's error if ctx ended the sleep. Called
// with mu held; returns with it released.
func (l *ReadyList) sleepDurably(ctx context.Context) error {
	s := &durableSleeper{}
	l.durables = append(l.durables, s)
	l.mu.Unlock()
	stop := func() bool { return false }
	withdraw := func() {
		l.mu.Lock()
		l.withdrawLocked(s)
		l.mu.Unlock()
	}
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, withdraw)
	}
	stopWatch := watchDone(ctx.Done(), withdraw) // bubble_ctx.go
	s.sema.park()
	if stopWatch != nil {
		stopWatch()
	}
	stop()
	if !s.woken {
		return ctx.Err() // only the context withdraws a sleeper unwoken
	}
	return nil
}

// withdrawLocked takes s off the durable sleepers and wakes it, unwoken:
// its context is done. Called with mu held.
func (l *ReadyList) withdrawLocked(s *durableSleeper) {
	for i, x := range l.durables {
		if x == s {
			l.durables = append(l.durables[:i], l.durables[i+1:]...)
			s.sema.wake()
			return
		}
	}
}

// realClockAfter returns, for a wait in a bubble that cannot sleep
// durably, a channel that receives when ctx's deadline, on the bubble's
// clock, has passed on the real clock; nil otherwise. The bubble does not
// idle while such a wait lasts, so its clock would never reach the
// deadline; the real clock does, as it does for net's deadlines in a
// bubble. The timer is made outside the bubble, on the real clock
// (madeOutsideBubble: a garbage collection per wait, in this case only).
func realClockAfter(ctx context.Context) <-chan time.Time {
	t, ok := ctx.Deadline()
	if !ok || !bubble.IsFakeTime(t) || !bubble.In() {
		return nil
	}
	left := time.Until(t)
	return madeOutsideBubble(func() <-chan time.Time { return time.After(left) })
}
