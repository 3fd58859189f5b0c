//go:build linux

package pollfd

// ReadyList: one goroutine watches many descriptors and is handed each
// one as it becomes readable, with no goroutine and no buffer per
// descriptor (golang.org/issue/15735).
//
// A watched Desc is armed or not; this state, like the gate's, is guarded
// by the Desc's mu. Transitions:
//
//	Watch            armed = true
//	read edge, no reader parked, armed
//	                 armed = false, queued = true, append to the list
//	read edge, a reader parked
//	                 the reader gets it (the gate's usual wake) and
//	                 armed = false: whoever reads the descriptor owns it
//	a reader parks   armed = true (its read hit EAGAIN: the next edge is
//	                 news; if the reader gives up on a deadline or context,
//	                 that edge goes to the list)
//	rearm            armed = true
//	Next             pops a queued Desc: queued = false
//	Unwatch, Unblock unlinked from the list; Next skips it
//
// So a descriptor is reported once per edge, never while a reader holds
// it, and never after it closes. Lock order: Desc.mu, then ReadyList.mu;
// the list never takes a Desc's mu while holding its own.

import (
	"context"
	"errors"
	"sync"
)

// ErrListClosed is returned by Next after Close.
var ErrListClosed = errors.New("pollfd: ready list closed")

// ReadyList collects watched descriptors whose read side became ready.
type ReadyList struct {
	mu     sync.Mutex
	items  []*Desc
	closed bool
	notify chan struct{} // capacity 1: "items may be non-empty"
}

// NewReadyList returns an empty list.
func NewReadyList() *ReadyList {
	newNotify := func() chan struct{} { return make(chan struct{}, 1) }
	if inBubble() {
		// The drain loop, outside the bubble, sends on it: a channel of
		// the bubble would be refused (bubble.go). So Next's waits are
		// not durable.
		return &ReadyList{notify: madeOutsideBubble(newNotify)}
	}
	return &ReadyList{notify: newNotify()}
}

// watch is a Desc's membership of a ReadyList, guarded by the Desc's mu.
type watch struct {
	list   *ReadyList
	cookie any
	armed  bool
	queued bool
}

// Watch adds d to l, armed: its next read edge puts it on the list. On a
// descriptor l already watches it re-arms it (unless it is queued). An
// edge that came since the read side's last Prepare, and is still
// unconsumed, puts it on the list at once. Readiness older than that
// raised no edge Watch can see; a caller that needs it reported probes the
// descriptor after Watch and calls NotifyReady if it is readable. cookie
// is what Next returns for d.
func (d *Desc) Watch(l *ReadyList, cookie any) error {
	if err := d.joined(0); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.is(descClosing) {
		return ErrClosing
	}
	w := &d.extLocked().watch
	if w.list != nil && w.list != l {
		return errors.New("pollfd: descriptor already watched by another list")
	}
	w.list, w.cookie = l, cookie
	if !w.queued {
		w.armed = true
		if d.rg.ready {
			d.reportLocked() // an edge since the last read's Prepare: readable, or was
		}
	}
	return nil
}

// Unwatch removes d from its list, if any.
func (d *Desc) Unwatch() {
	d.mu.Lock()
	d.unwatchLocked()
	d.mu.Unlock()
}

func (d *Desc) unwatchLocked() {
	w := d.watchLocked()
	if w == nil {
		return
	}
	if w.queued {
		w.list.remove(d)
	}
	*w = watch{}
}

// rearm arms a watched descriptor again, so its next read edge is
// reported: for a reader that hands it back without reading until EAGAIN.
func (d *Desc) rearm() {
	d.mu.Lock()
	if w := d.watchLocked(); w != nil && !w.queued {
		w.armed = true
	}
	d.mu.Unlock()
}

// NotifyReady reports an armed descriptor now, as an edge would: for
// readiness that arrived before Watch.
func (d *Desc) NotifyReady() {
	d.mu.Lock()
	d.reportLocked()
	d.mu.Unlock()
}

// reportLocked queues d if it is armed. Called with d.mu held.
func (d *Desc) reportLocked() {
	w := d.watchLocked()
	if w == nil || !w.armed || d.is(descClosing) {
		return
	}
	w.armed, w.queued = false, true
	w.list.push(d)
}

func (l *ReadyList) push(d *Desc) {
	l.mu.Lock()
	if !l.closed {
		l.items = append(l.items, d)
		select { // under mu: Close closes notify under mu too
		case l.notify <- struct{}{}:
		default:
		}
	}
	l.mu.Unlock()
}

func (l *ReadyList) remove(d *Desc) {
	l.mu.Lock()
	for i, x := range l.items {
		if x == d {
			l.items = append(l.items[:i], l.items[i+1:]...)
			break
		}
	}
	l.mu.Unlock()
}

// Next returns the cookie of the next descriptor that became readable,
// waiting until one does, ctx is done or the list is closed.
func (l *ReadyList) Next(ctx context.Context) (any, error) {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, ErrListClosed
		}
		var d *Desc
		if len(l.items) > 0 {
			d = l.items[0]
			l.items[0] = nil
			l.items = l.items[1:]
			if len(l.items) > 0 {
				select { // more for another Next
				case l.notify <- struct{}{}:
				default:
				}
			}
		}
		l.mu.Unlock()
		if d == nil {
			select {
			case <-l.notify:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		d.mu.Lock()
		w := d.watchLocked()
		if w == nil || w.list != l || !w.queued || d.is(descClosing) {
			d.mu.Unlock() // unwatched or closed since it was queued
			continue
		}
		w.queued = false
		cookie := w.cookie
		d.mu.Unlock()
		return cookie, nil
	}
}

// Len reports how many descriptors are queued.
func (l *ReadyList) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}

// Close wakes every Next with ErrListClosed. Watched descriptors stay
// watched until Unwatch or their own close.
func (l *ReadyList) Close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.notify)
	}
	l.mu.Unlock()
}
