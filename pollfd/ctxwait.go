//go:build linux

package pollfd

// Waits a context can cancel (WaitContext).
//
// Two ways to park. A context that keeps coming back — a server's, passed
// to every read of a connection, or a request's over the many reads of one
// body — is registered with context.AfterFunc once per gate and kept; a
// wait with it parks on the gate's semaphore as Wait does (parkLocked,
// park.go): no select, no sudog, no allocation, and a stack about as
// shallow as Wait's (a select's frames doubled an idle connection's stack
// to 4 KiB). A gate's first cancellable wait registers. If a registration
// then serves a single wait before another context replaces it, the gate's
// contexts come one per call (a fresh context per ReadContext), where a
// registration (a goroutine and its allocations) would cost more than it
// saves: such waits select on the gate's wake channel and the context's Done
// channel (parkLocked's select medium) until a context comes back twice
// in a row.
//
// Registrations are keyed by the context's Done channel (contexts are not
// always comparable; two contexts sharing a Done channel end together).
// The protocol of a registered park, all under the Desc's mu:
//
//	park     if ctx is already done, withdraw (errDone); else parked =
//	         true, then the park (park.go) on the gate's semaphore.
//	         ctx.Err() is set before any AfterFunc callback starts, so a
//	         cancellation either is seen here or finds waiting set.
//	fired    the AfterFunc callback (its own goroutine): if waiting and
//	         parked and the registration is still this gate's for that
//	         Done channel, set canceled and wake the gate (wakeLocked) —
//	         exactly a waker's move, so one park still gets one token.
//	woken    parked = false; canceled → clear it and, unless ready (which
//	         wins) or an error, return errDone.
//	register a goroutine of its own makes the AfterFunc registration (off
//	         the waiter's stack; the waiter does not wait for it) and hands
//	         its stop to the gate, unless the gate has moved on to another
//	         context or is closing: then it stops it at once.
//	Unblock  stops both registrations (after mu), so a closed descriptor
//	         leaves nothing in a long-lived context.
//
// A registration replaced by another context is stopped; if its callback
// is already running it finds its Done channel no longer registered and
// does nothing. A cancellation before the registration exists is seen by
// the waiter's ctx.Err() check; after it, by the callback.
//
// A context that is not one of the standard library's cancelable contexts
// (nor built on one) makes AfterFunc watch it with a goroutine, per
// registration, not per wait. A registration made in a synctest bubble is
// stopped as its wait ends (endCancelableLocked): such a goroutine would
// otherwise be the bubble's, blocked on a channel the bubble cannot
// close, and keep the bubble from ending until the descriptor closed.

import (
	"context"
	"math"

	"github.com/gatenet/gatenet/internal/bubble"
)

// ctxGate is a gate's context registration. 32 bytes: an idle server
// with a context per connection holds two per connection.
type ctxGate struct {
	last     <-chan struct{} // the Done channel of the gate's last cancellable wait
	done     <-chan struct{} // the registered context's Done channel
	stop     func() bool     // context.AfterFunc's stop
	uses     uint32          // waits the registration has served (saturating)
	perCall  bool            // contexts come one per call: select unless one repeats
	parked   bool            // the current park can be cancelled by it
	canceled bool            // the registration's callback woke the park
	bubble   bool            // made in a synctest bubble: stopped as its wait ends
}

// descCtx holds both gates' registrations, made on the first cancellable
// wait (most descriptors never have one).
type descCtx struct{ r, w ctxGate }

// ctxGate returns g's registration slot, making the Desc's on first use.
// Called with mu held.
func (d *Desc) ctxGate(g *gate) *ctxGate {
	if d.ctx == nil {
		d.ctx = new(descCtx)
	}
	if g == &d.rg {
		return &d.ctx.r
	}
	return &d.ctx.w
}

// ctxGateFor returns g's registration for ctx, registering it unless
// this gate's contexts are one per call (see the top of this file), or
// nil: this wait selects. Called with mu held.
//
// register says the park must be registered, not a select: it is durable,
// or sleeps in a real-clock slot (bubble.go).
func (d *Desc) ctxGateFor(ctx context.Context, g *gate, register bool) *ctxGate {
	done := ctx.Done()
	cg := d.ctxGate(g)
	again := cg.last == done
	cg.last = done
	switch {
	case register && cg.done != done:
		d.registerLocked(ctx, g, cg, done)
		cg.uses = 1
		return cg
	case cg.done == done:
		if cg.uses < math.MaxUint32 {
			cg.uses++
		}
		return cg
	case again:
		cg.perCall = false // a context that came back: worth registering
	case cg.perCall:
		return nil
	case cg.done != nil && cg.uses <= 1:
		// The registration this replaces served a single wait: contexts
		// come one per call here. Select from now on, until one repeats.
		cg.perCall = true
		return nil
	}
	d.registerLocked(ctx, g, cg, done)
	cg.uses = 1
	return cg
}

// registerLocked makes cg the registration for ctx (whose Done channel is
// done), replacing another context's. Called with mu held.
func (d *Desc) registerLocked(ctx context.Context, g *gate, cg *ctxGate, done <-chan struct{}) {
	if cg.done == done {
		return
	}
	if cg.stop != nil {
		cg.stop()
	}
	cg.done, cg.stop = done, nil
	cg.bubble = bubble.In()
	// context.AfterFunc runs deep (the parent's children map may grow): on
	// the waiter's stack it would double a parked goroutine's stack to
	// 4 KiB for good. So it runs on a short-lived goroutine of its own,
	// which the waiter does not wait for: a cancellation that comes before
	// the registration is made finds ctx.Err() set under mu (the waiter
	// checks it before parking), and one after it runs the callback.
	go d.register(ctx, g, cg, done)
}

// register makes the AfterFunc registration and hands its stop to cg,
// unless cg has moved on (another context, or Unblock) meanwhile: then it
// stops it at once.
func (d *Desc) register(ctx context.Context, g *gate, cg *ctxGate, done <-chan struct{}) {
	stop := context.AfterFunc(ctx, func() { d.contextDone(g, done) })
	d.mu.Lock()
	if cg.done == done && cg.stop == nil && !d.is(descClosing) {
		cg.stop = stop
		stop = nil
	}
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// contextDone is the AfterFunc callback: it wakes a park that ctx can
// cancel, as a waker would.
func (d *Desc) contextDone(g *gate, done <-chan struct{}) {
	d.mu.Lock()
	if cg := d.ctxGate(g); cg.done == done && cg.parked && g.waiting {
		cg.canceled = true
		d.shard.stats.canceled.Add(1)
		d.wakeLocked(g)
	}
	d.mu.Unlock()
}

// stopContextsLocked forgets both registrations and returns their stops,
// for the caller to run after mu (Unblock).
func (d *Desc) stopContextsLocked() (stops [2]func() bool) {
	if d.ctx == nil {
		return
	}
	for i, cg := range [2]*ctxGate{&d.ctx.r, &d.ctx.w} {
		stops[i] = cg.stop
		cg.done, cg.stop = nil, nil
	}
	return
}

// waitCancelable is wait, abandoned (errDone) when ctx is done; ctx has a
// Done channel (WaitContext sends the others to wait). Its parks are
// parkLocked's (park.go): on the gate's semaphore with a registered
// context, whose callback is one more waker, or in a select on the
// context's Done channel with one that is not.
func (d *Desc) waitCancelable(ctx context.Context, mode Mode) error {
	g, err := d.beginWait(mode)
	if err != nil {
		return err
	}
	var reg *ctxGate // the registration this wait used, if any
	for {
		if done, err := d.settleLocked(mode, g); done {
			return d.endCancelableLocked(reg, err)
		}
		var canceled bool
		s := d.realClockCtxSlotLocked(g, ctx)
		switch cg := d.ctxGateFor(ctx, g, g.durable || s != nil); {
		case cg == nil: // contexts come one per call here: select
			canceled = d.parkLocked(g, nil, ctx.Done())
		case ctx.Err() != nil: // registered, and already done
			d.shard.stats.canceled.Add(1)
			return d.endCancelableLocked(cg, errDone)
		default:
			reg = cg
			cg.parked = true
			var stopWatch func()
			if g.durable {
				done := ctx.Done()
				stopWatch = watchDone(done, func() { d.contextDone(g, done) }) // bubble_ctx.go
			}
			d.parkLocked(g, s, nil)
			if stopWatch != nil {
				stopWatch()
			}
			cg.parked = false
			canceled, cg.canceled = cg.canceled || (s != nil && s.ctxExpired), false
		}
		if canceled {
			if done, err := d.canceledLocked(mode, g); done {
				return d.endCancelableLocked(reg, err)
			}
		}
	}
}

// endCancelableLocked ends a cancellable wait with err: it releases mu,
// and stops cg, the registration the wait used, if it was made in a
// synctest bubble (see the top of this file). Called with mu held.
func (d *Desc) endCancelableLocked(cg *ctxGate, err error) error {
	var stop func() bool
	if cg != nil && cg.bubble {
		stop = cg.stop // nil while register is still making it: it stops its own then
		cg.done, cg.stop, cg.bubble = nil, nil, false
	}
	d.mu.Unlock()
	if stop != nil {
		stop()
	}
	return err
}

// canceledLocked decides a park the context ended: readiness that came
// with the cancellation wins (not done: the loop consumes it), then an
// error, then errDone. Called with mu held.
func (d *Desc) canceledLocked(mode Mode, g *gate) (done bool, err error) {
	if g.ready {
		return false, nil
	}
	if err := d.check(mode, g); err != nil {
		return true, err
	}
	return true, errDone
}
