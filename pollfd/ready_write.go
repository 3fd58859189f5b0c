//go:build linux

package pollfd

// Write interest: a ReadyList reports a watched Desc when it becomes
// writable too, so that one goroutine can hold output for many
// descriptors and send it as room comes, with no goroutine per descriptor
// (gatenet.ReadyQueue.Write). The write side's state is the read side's,
// in the Desc's watch, under its mu:
//
//	WatchWrite       writeArmed = true (unless writeQueued); and if the
//	                 write gate's Ready is set (an edge since its Prepare)
//	                 or its deadline expired: queued at once. With
//	                 holdReads, holdReads = true.
//	write edge, no writer parked, writeArmed
//	                 writeArmed = false, writeQueued = true, appended to
//	                 the list as a write report
//	write edge, a writer parked
//	                 the writer gets it (the gate's wake); writeArmed stays
//	NotifyWritable   the descriptor's own writer released its write lock
//	                 after it parked for room, or after a flush found the
//	                 lock held (internal/poll's writeUnlock and wantWrite):
//	                 if writeArmed, queued as a write edge with no writer
//	                 parked is, since that writer may have taken every
//	                 edge the list waited for; if not, and a flush found
//	                 the lock held (kick), writeKick = true, and the
//	                 WatchWrite that follows queues d at once
//	write deadline expires, writeArmed
//	                 queued, as a write edge with no writer parked is
//	                 (and a parked writer is woken, with ErrTimeout): the
//	                 flush that follows fails with the deadline's error,
//	                 so a deadline bounds output held for a peer that
//	                 stops reading
//	NextEvent        pops a write report: writeQueued = false
//	Watch            holdReads = false
//	ReleaseReads     holdReads = false; an armed Desc with the read gate's
//	                 Ready set is queued, as at a read edge
//	Unwatch, Unblock unlinked, both kinds; NextEvent skips them
//
// holdReads is the backpressure: while it is set a read edge leaves the
// Desc armed and unreported, and the Watch that ends the hold reports it
// if an edge came meanwhile (the read gate's Ready says so), as any Watch
// does.
//
// Why no write edge is lost: the caller's write hit EAGAIN after its
// Prepare cleared the write gate's Ready; an edge after that sets Ready
// (deliver) and, if writeArmed is not set yet, stays there until
// WatchWrite, which looks at Ready under the same mu. A wait on the write
// gate with a context already done returns before it consumes Ready
// (WaitContext), so the write that found no room does not eat the edge.
//
// In a bubble, a write report comes from the bubble's own goroutine when
// it can: the peer's read that made room reports it before the read
// returns (wakeDurable), and a Next may sleep durably while the member
// waits for room only if the wait itself could park durably
// (durableLocked's rule for a writer, decided when WatchWrite arms it).

import "errors"

// ErrNotWatched is WatchWrite's error for a descriptor the list does not
// watch.
var ErrNotWatched = errors.New("pollfd: descriptor not watched by this list")

// WatchWrite asks l, which watches d, to report d once when it is
// writable (NextEvent's write), and, with holdReads, to withhold d's read
// reports until the next Watch.
func (d *Desc) WatchWrite(l *ReadyList, holdReads bool) error {
	if d.unopened() {
		return errNotOpened
	}
	if err := d.joined(0); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.is(descClosing) {
		return ErrClosing
	}
	w := d.watchLocked()
	if w == nil || w.list != l {
		return ErrNotWatched
	}
	if holdReads {
		w.holdReads = true
	}
	kick := w.writeKick
	w.writeKick = false
	if w.writeQueued {
		return nil
	}
	w.writeArmed = true
	if d.wg.ready || d.wg.expired || kick {
		d.reportWriteLocked()
		return nil
	}
	if l.bubble != 0 {
		durable := d.is(descDurable) && d.writeDurableLocked()
		l.mu.Lock()
		if _, ok := l.members[d]; ok {
			l.members[d] = durable
			if !durable {
				l.reparkDurablesLocked()
			}
		}
		l.mu.Unlock()
	}
	return nil
}

// ReleaseReads ends a hold of d's read reports (WatchWrite's holdReads)
// without arming d, as Watch would: a d still armed is reported if a read
// edge came while it was held; one a reader holds (reported and not yet
// handed back) stays that reader's.
func (d *Desc) ReleaseReads() {
	if d.unopened() {
		return
	}
	d.mu.Lock()
	if w := d.watchLocked(); w != nil && w.holdReads {
		w.holdReads = false
		if d.rg.ready {
			d.reportLocked()
		}
	}
	d.mu.Unlock()
}

// NotifyWritable tells the list watching d that d's own writer released
// its write lock: a writer through d's own Write may have taken every
// write edge the list's output waited for, so an armed list hears of one
// now; kick says a flush found the lock held (and so never wrote), and
// makes the list's next WatchWrite report at once. A spurious report
// costs one write that finds no room.
func (d *Desc) NotifyWritable(kick bool) {
	if d.unopened() {
		return
	}
	d.mu.Lock()
	if w := d.watchLocked(); w != nil {
		if w.writeArmed {
			d.reportWriteLocked()
		} else if kick {
			w.writeKick = true
		}
	}
	d.mu.Unlock()
}

// reportWriteLocked queues a write report of d if it is writeArmed.
// Called with d.mu held.
func (d *Desc) reportWriteLocked() {
	w := d.watchLocked()
	if w == nil || !w.writeArmed || d.is(descClosing) {
		return
	}
	w.writeArmed, w.writeQueued = false, true
	w.list.push(report{d: d, write: true})
}

// writeExpiredLocked reports d's write edge to its list, if one waits for
// it, when g, the gate whose deadline expired, is d's write gate. Called
// with d.mu held.
func (d *Desc) writeExpiredLocked(g *gate) {
	if g == &d.wg {
		d.reportWriteLocked()
	}
}

// writeDurableLocked reports whether a writer of d parked now could park
// durably (durableLocked's rule, for a wait that is not parked). Called
// with d.mu held, for a durable d.
func (d *Desc) writeDurableLocked() bool {
	var g gate // a probe: durableLocked sets its durable and reads no deadline
	ready := d.durableLocked(ModeWrite, &g)
	return g.durable && !ready
}

// WatchCookie returns the cookie l's Watch gave d, nil if l does not
// watch d.
func (d *Desc) WatchCookie(l *ReadyList) any {
	if d.unopened() {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.watchLocked(); w != nil && w.list == l {
		return w.cookie
	}
	return nil
}
