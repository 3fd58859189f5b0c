//go:build linux

package pollfd

// The park: how a waiter sleeps on a gate and how a waker hands it the one
// token. gate.go's protocol says when a waiter parks and who may wake it
// (waiting, woken); this is the sequence both sides run, on every medium.
//
// A park, by its waiter:
//
//	publish  with mu held since its last look (settleLocked found nothing
//	         to consume and no error), choose the medium, set waiting, and
//	         with it selected or inSlot (and the altPark's slot) for the
//	         media that need them; release mu.
//	sleep    on the medium, until the waker that clears waiting gives its
//	         token; a select also ends when its context's Done closes, a
//	         slot if its RawConn.Read fails.
//	resume   retake mu; resumedLocked: if woken, clear it and take back
//	         the shard's runnable count (gate.go, "The runnable count").
//	withdraw waiting still set means no waker claimed the park (the
//	         context ended the select, or the slot's Read failed): clear it,
//	         and inSlot and the slot with it; no token will come. A select
//	         that Done ended after a waker claimed it takes the token the
//	         waker gave, so the next park finds none. selected is cleared
//	         either way; a slot goes back to the shard only after this
//	         step (slots.go says why).
//
// A wake, by its waker (wakeLocked), under mu: if waiting, clear it, set
// woken, add one to shard.runnable, clear the medium's flag and give the
// token on the medium the waiter published. Only the waker that clears
// waiting gives a token, and only a new park, after its waiter resumed,
// sets waiting again: one park, at most one token.
//
// The media, each keeping a token given before its waiter sleeps, so that
// the window between releasing mu and sleeping loses nothing:
//
//	sema    the gate's parkSema: the runtime's gopark, readied by goready
//	        (sema_runtime.go); in race builds a channel of capacity one
//	        (sema_race.go). Every park that uses no other medium.
//	slot    a park slot (slots.go): the waiter sleeps in an eventfd's
//	        RawConn.Read, in the runtime's poller, and the token is an
//	        eventfd write. Waits no context can cancel, with
//	        Options.RuntimePark, while a slot is free and the scheduler is
//	        not busy (Desc.harvest).
//	select  the altPark's wake channel (capacity one), in a select with the
//	        context's Done channel: cancellable waits whose contexts come
//	        one per call (ctxwait.go).
//	durable the altPark's durableSema (sema_durable.go): the runtime's park
//	        with a wait reason a synctest bubble counts as durably blocked;
//	        a context is one more waker, through its registration
//	        (ctxwait.go), never a select (bubble.go).
//
// The sequence is parkLocked, for every park: wait's and waitCancelable's
// loops call it once they must park. What a parked goroutine keeps on its
// stack is the loop's frame, parkLocked's and the runtime's (the
// stack-depth rule at the top of gate.go): so parkLocked's steps before
// and after the sleep that need room (publishLocked, unparkLocked) are
// calls, whose frames are gone by the time it sleeps; the select
// (sleepOrDone) is a call whose frame only parks that select keep; and the
// semaphore's park, the usual one, is inline.

import "github.com/gatenet/gatenet/internal/bubble"

// parkLocked parks g's waiter: on slot s if s is not nil (taken from the
// shard's slots, given back here), in a select on g's wake channel and done
// if done is not nil, else on g's semaphore. The caller holds mu, and
// settleLocked found nothing to consume and no error in this lock
// acquisition. parkLocked returns with mu held and reports whether done
// ended the park; the gate then owes no token, whether or not a waker
// claimed the park too.
func (d *Desc) parkLocked(g *gate, s *parkSlot, done <-chan struct{}) (ended bool) {
	wake, ds := d.publishLocked(g, s, done)
	d.mu.Unlock()
	d.shard.stats.parks.Add(1)
	switch {
	case s != nil:
		d.shard.stats.parksInSlot.Add(1)
		s.sleep()
	case ds != nil:
		ds.park()
	case wake != nil:
		ended = sleepOrDone(wake, done)
	default:
		g.sema.park()
	}
	d.mu.Lock()
	d.resumedLocked(g)
	d.unparkLocked(g, s, wake, ended)
	return ended
}

// publishLocked is a park's first step: it readies the medium parkLocked
// was given and sets waiting. It returns g's wake channel if the park
// selects, its durableSema if it is durable. Called with mu held.
//
//go:noinline
func (d *Desc) publishLocked(g *gate, s *parkSlot, done <-chan struct{}) (wake chan struct{}, ds *durableSema) {
	switch {
	case g.durable: // durableLocked chose it; never with a slot (wait) nor a select (ctxGateFor)
		ds = &d.altLocked(g).durable
	case s != nil:
		s.d, s.g = d, g
		d.altLocked(g).slot, g.inSlot = s, true
	case done != nil:
		a := d.altLocked(g)
		if a.wake == nil {
			if bubble.In() { // not a channel of the bubble: the drain loop sends on it (bubble.go)
				a.wake = madeOutsideBubble(newWake)
			} else {
				a.wake = newWake()
			}
		}
		wake, g.selected = a.wake, true
	default:
		g.sema.prepare()
	}
	g.waiting = true
	return wake, ds
}

func newWake() chan struct{} { return make(chan struct{}, 1) }

// unparkLocked is a park's last step, after resumedLocked: it withdraws a
// park no waker claimed, takes the token of one a waker claimed as done
// ended it, and gives the slot back. Called with mu held.
//
//go:noinline
func (d *Desc) unparkLocked(g *gate, s *parkSlot, wake chan struct{}, ended bool) {
	g.selected, g.durable = false, false
	switch {
	case g.waiting: // nobody claimed the park: withdraw it
		g.waiting = false
		if s != nil {
			g.inSlot, d.altLocked(g).slot = false, nil
			if s.deadline {
				d.realDeadlineLocked(g, s) // its read deadline ended it
			}
			s.ctxExpired = s.ctxDeadline
		}
		if ended {
			d.shard.stats.canceled.Add(1)
		}
	case ended:
		<-wake // a waker claimed the park too, and gave its token under mu
	}
	switch {
	case s == nil:
	case s.deadline || s.ctxDeadline:
		s.file.Close() // no waker holds it: the park is claimed or withdrawn
	default:
		d.shard.parkSlots.put(s)
	}
}

// sleepOrDone sleeps until wake has the token or done closes, and reports
// whether done ended it. Out of parkLocked so that the select's frame is
// paid only by parks that select.
//
//go:noinline
func sleepOrDone(wake chan struct{}, done <-chan struct{}) bool {
	select {
	case <-wake:
		return false
	case <-done:
		return true
	}
}

// resumedLocked is a waiter's first step after a park, with mu held
// again: if a waker woke it, it is running now, and no longer counts in
// shard.runnable.
func (d *Desc) resumedLocked(g *gate) {
	if g.woken {
		g.woken = false
		d.shard.runnable.Add(-1)
	}
}

// wakeLocked is the waker's half of the park: it hands the single token
// to g's parked waiter, on the medium the waiter published. Called with mu
// held; reports whether a waiter was woken.
func (d *Desc) wakeLocked(g *gate) bool {
	if !g.waiting {
		return false
	}
	g.waiting = false
	g.woken = true
	d.shard.runnable.Add(1)
	switch {
	case g.inSlot:
		a := d.altLocked(g)
		s := a.slot
		g.inSlot, a.slot = false, nil
		s.signal()
	case g.durable:
		d.altLocked(g).durable.wake()
	case g.selected:
		d.altLocked(g).wake <- struct{}{} // never blocks: one token per park, capacity 1
	default:
		g.sema.wake()
	}
	return true
}

// wakeEdgeLocked is wakeLocked for the drain loop's edges, a harvest's
// and kicks: they never wake a durable park, which the bubble's own
// goroutines wake (bubble.go); the edge stays in ready.
func (d *Desc) wakeEdgeLocked(g *gate) bool {
	if g.durable {
		return false
	}
	return d.wakeLocked(g)
}
