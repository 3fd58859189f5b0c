//go:build linux

package pollfd

// Waits a context can cancel (WaitContext).
//
// A cancellable wait parks on the gate's channel like any other wait; the
// context reaches it through context.AfterFunc, registered once per gate
// and context and kept while the gate keeps being waited on with that
// context — a server passes the same context to every read of a
// connection. So a cancellable park costs what a plain one does: one
// channel receive, no select with a second sudog, no allocation after the
// first wait, and a stack as shallow as Wait's (a select's frames doubled
// an idle connection's stack to 4 KiB).
//
// Registrations are keyed by the context's Done channel (contexts are not
// always comparable; two contexts sharing a Done channel end together).
// The protocol, all under the Desc's mu:
//
//	park     register (or reuse) the gate's registration for ctx; then, if
//	         ctx is already done, withdraw (errDone); else parked = true,
//	         waiting = true, park on wake. ctx.Err() is set before any
//	         AfterFunc callback starts, so a cancellation either is seen
//	         here or finds waiting set.
//	fired    the AfterFunc callback (its own goroutine): if waiting and
//	         parked and the registration is still this gate's for that
//	         Done channel, clear waiting, set canceled, send the token —
//	         exactly a waker's move, so one park still gets one token.
//	woken    parked = false; canceled → clear it and, unless ready (which
//	         wins) or an error, return errDone.
//	Unblock  stops both registrations (after mu), so a closed descriptor
//	         leaves nothing in a long-lived context.
//
// A registration replaced by another context is stopped; if its callback
// is already running it finds its Done channel no longer registered and
// does nothing.
//
// A context that is not one of the standard library's cancelable contexts
// (nor built on one) makes AfterFunc watch it with a goroutine, per
// registration, not per wait.

import "context"

// ctxGate is a gate's context registration.
type ctxGate struct {
	done     <-chan struct{} // the registered context's Done channel
	stop     func() bool     // context.AfterFunc's stop
	parked   bool            // the current park can be cancelled by it
	canceled bool            // the registration's callback woke the park
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

// registerLocked makes cg the registration for ctx (whose Done channel is
// done), replacing another context's. Called with mu held.
func (d *Desc) registerLocked(g *gate, cg *ctxGate, ctx context.Context, done <-chan struct{}) {
	if cg.done == done {
		return
	}
	if cg.stop != nil {
		cg.stop()
	}
	cg.done = done
	// context.AfterFunc runs deep (the parent's children map may grow):
	// on the waiter's stack it would double a parked goroutine's stack to
	// 4 KiB for good, so it runs on a short-lived goroutine of its own,
	// once per registration. It takes no lock of ours.
	reg := make(chan func() bool, 1)
	go func() { reg <- context.AfterFunc(ctx, func() { d.contextDone(g, done) }) }()
	cg.stop = <-reg
}

// contextDone is the AfterFunc callback: it wakes a park that ctx can
// cancel, as a waker would.
func (d *Desc) contextDone(g *gate, done <-chan struct{}) {
	d.mu.Lock()
	if cg := d.ctxGate(g); cg.done == done && cg.parked && g.waiting {
		g.waiting = false
		cg.canceled = true
		d.shard.stats.canceled.Add(1)
		g.wake <- struct{}{} // cancellable parks are on the channel
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
