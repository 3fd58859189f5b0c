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
// A watched Desc may also ask for its write side (ready_write.go):
// writeArmed, writeQueued and holdReads follow the same rules for write
// edges, and while holdReads is set a read edge leaves the Desc armed but
// unreported, until the next Watch.
//
// So a descriptor is reported once per edge, never while a reader holds
// it, and never after it closes. Lock order: Desc.mu, then ReadyList.mu;
// the list never takes a Desc's mu while holding its own.
//
// How Next sleeps, and how a report wakes it. A Next that finds the list
// empty sleeps on one of two media, both under the list's mu:
//
//	slot    its context can never be done (Done is nil), the list's first
//	        watched Desc came from a shard with RuntimePark, a park slot
//	        of that shard is free and the scheduler is not busy (the
//	        gate's rule, slots.go): it appends the slot to sleepers,
//	        releases mu and sleeps in the slot's RawConn.Read until
//	        listWoken is set.
//	durable the list was made in a synctest bubble, the caller is in
//	        that bubble and every watched Desc parks durably there
//	        (durableLocked): it appends a durable sleeper to durables,
//	        releases mu and sleeps on the sleeper's durableSema, which the
//	        bubble counts as durably blocked (bubble.go); its context, if
//	        any, wakes it through context.AfterFunc.
//	notify  otherwise: it releases mu and selects on notify (capacity
//	        one, "items may be non-empty") and its context's Done.
//
// A report (push), and a Next that pops an item and leaves more, wake one
// sleeper (wakeOneLocked), under mu: a durable sleeper if there is one,
// else the last of sleepers (set listWoken, unlink it, write its eventfd),
// else a token on notify.
// Either way the woken Next retakes mu and looks again, so a wake it finds
// spent (another Next took the item first) costs a look, not a report.
// None is lost: an item is appended and a wake given under one hold of mu,
// and a sleeper publishes itself under the same hold of mu in which it
// found the list empty; a slot's sleeper that a write reaches before its
// Read started sees listWoken at its first look (slots.go). The slot goes
// back to the shard only after its sleeper retook mu, so no write reaches
// it there; a Read that fails (never, while the slot is lent) withdraws
// the sleeper. Close sets closed, closes notify and wakes every sleeper.
//
// In a bubble. A durable member's reports come from the bubble's own
// goroutines: the peer's write that made it readable reports it before the
// write returns (wakeDurable, bubble.go), so the list is never empty while
// a goroutine of the bubble could still fill it, and the bubble may idle
// while Next sleeps. A member that stops being durable (unpaired, or
// watched while it is not durable) wakes the durable sleepers, which look
// again and sleep by the rule that now holds (reparkDurablesLocked).
//
// Why a slot: a report comes from the drain loop (or a harvest), and a
// goroutine readied from Go code makes the scheduler wake an idle P's
// thread, a futex wake per report; a slot's sleeper is readied by the
// runtime's poller on the thread that goes idle, usually the drain
// loop's own, with no thread woken (docs/DESIGN.md, "ReadyList and
// ReadyQueue"; docs/PERFORMANCE.md has the measurement).

import (
	"context"
	"errors"
	"sync"

	"github.com/gatenet/gatenet/internal/bubble"
)

// ErrListClosed is returned by Next after Close, and by Watch on a
// closed list.
var ErrListClosed = errors.New("pollfd: ready list closed")

// ErrWatchedElsewhere is Watch's error for a descriptor another open list
// watches.
var ErrWatchedElsewhere = errors.New("pollfd: descriptor already watched by another list")

// ReadyList collects watched descriptors whose read side became ready.
// The zero value is an empty list, as NewReadyList's outside a synctest
// bubble (NewReadyList in a bubble makes one whose Next sleeps durably
// there).
type ReadyList struct {
	mu     sync.Mutex
	items  []report
	closed bool
	notify chan struct{} // capacity 1: "items may be non-empty"

	// slots is the shard whose park slots Next sleeps in (the first
	// watched Desc's, if its poller has RuntimePark); sleepers are the
	// Nexts asleep in one, each woken by one report.
	slots    *shard
	sleepers []*parkSlot

	// In a synctest bubble: the bubble the list was made in (0 outside
	// every bubble), the Descs it watches, and the Nexts asleep durably.
	bubble   uint64
	members  map[*Desc]bool
	durables []*durableSleeper
}

// report is one item of the list: d became readable, or writable.
type report struct {
	d     *Desc
	write bool
}

// durableSleeper is a Next asleep durably: woken, under the list's mu,
// by a report, Close, its context or a member that stops being durable.
type durableSleeper struct {
	sema  durableSema
	woken bool
}

// NewReadyList returns an empty list.
func NewReadyList() *ReadyList {
	if bubble.In() {
		return &ReadyList{notify: newNotify(), bubble: currentBubble()}
	}
	return &ReadyList{notify: newNotify()}
}

// newNotify makes a list's notify channel. In a bubble it is made outside
// it: the drain loop, outside the bubble, sends on it, and a channel of
// the bubble would be refused. Next's durable sleeps are on a
// durableSema instead.
func newNotify() chan struct{} {
	make1 := func() chan struct{} { return make(chan struct{}, 1) }
	if bubble.In() {
		return madeOutsideBubble(make1)
	}
	return make1()
}

// notifyLocked is l.notify, made on first use for a zero ReadyList.
// Called with mu held.
func (l *ReadyList) notifyLocked() chan struct{} {
	if l.notify == nil {
		l.notify = newNotify()
	}
	return l.notify
}

// errNoList is the error of a nil *ReadyList.
var errNoList = errors.New("pollfd: nil ReadyList")

// watch is a Desc's membership of a ReadyList, guarded by the Desc's mu.
type watch struct {
	list   *ReadyList
	cookie any
	armed  bool
	queued bool

	writeArmed  bool // ready_write.go
	writeQueued bool
	writeKick   bool // NotifyWritable came while not writeArmed
	holdReads   bool
}

// Watch adds d to l, armed: its next read edge puts it on the list. On a
// descriptor l already watches it re-arms it (unless it is queued). An
// edge that came since the read side's last Prepare, and is still
// unconsumed, puts it on the list at once. Readiness older than that
// raised no edge Watch can see; a caller that needs it reported probes the
// descriptor after Watch and calls NotifyReady if it is readable. cookie
// is what Next returns for d. Watch ends a hold of d's read reports
// (WatchWrite). It fails on a closed list, and on a descriptor another
// open list watches; one a closed list still watches moves to l.
func (d *Desc) Watch(l *ReadyList, cookie any) error {
	if d.unopened() {
		return errNotOpened
	}
	if l == nil {
		return errNoList
	}
	if err := d.joined(0); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.is(descClosing) {
		return ErrClosing
	}
	if l.isClosed() {
		return ErrListClosed
	}
	w := &d.extLocked().watch
	if w.list != nil && w.list != l {
		if !w.list.isClosed() {
			return ErrWatchedElsewhere
		}
		d.unwatchLocked()
	}
	if w.list == nil && l.bubble != 0 {
		l.join(d)
	}
	w.list, w.cookie = l, cookie
	if d.shard.runtimePark {
		l.lendSlots(d.shard)
	}
	w.holdReads = false
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
	if d.unopened() {
		return
	}
	d.mu.Lock()
	d.unwatchLocked()
	d.mu.Unlock()
}

func (d *Desc) unwatchLocked() {
	w := d.watchLocked()
	if w == nil {
		return
	}
	if w.queued || w.writeQueued {
		w.list.remove(d)
	}
	if w.list.bubble != 0 {
		w.list.leave(d)
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
	if d.unopened() {
		return
	}
	d.mu.Lock()
	d.reportLocked()
	d.mu.Unlock()
}

// reportLocked queues d if it is armed. Called with d.mu held.
func (d *Desc) reportLocked() {
	w := d.watchLocked()
	if w == nil || !w.armed || w.holdReads || d.is(descClosing) {
		return
	}
	w.armed, w.queued = false, true
	w.list.push(report{d: d})
}

func (l *ReadyList) push(r report) {
	l.mu.Lock()
	if !l.closed {
		l.items = append(l.items, r)
		if _, ok := l.members[r.d]; ok && r.write {
			l.members[r.d] = true // reported: no longer waiting for room (ready_bubble.go)
		}
		l.wakeOneLocked()
	}
	l.mu.Unlock()
}

func (l *ReadyList) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// lendSlots makes s's park slots the ones Next sleeps in, if it has none
// yet.
func (l *ReadyList) lendSlots(s *shard) {
	l.mu.Lock()
	if l.slots == nil {
		l.slots = s
	}
	l.mu.Unlock()
}

// wakeOneLocked tells one Next that items may be non-empty: a sleeper in
// a slot if there is one, else the notify channel. Called with mu held,
// so a slot's eventfd is written before its sleeper can give it back.
func (l *ReadyList) wakeOneLocked() {
	if n := len(l.durables); n > 0 {
		s := l.durables[n-1]
		l.durables[n-1] = nil
		l.durables = l.durables[:n-1]
		s.woken = true
		s.sema.wake()
		return
	}
	if n := len(l.sleepers); n > 0 {
		s := l.sleepers[n-1]
		l.sleepers[n-1] = nil
		l.sleepers = l.sleepers[:n-1]
		s.listWoken = true
		s.signal()
		return
	}
	select {
	case l.notifyLocked() <- struct{}{}:
	default:
	}
}

// sleepLocked parks a Next that found nothing in a park slot, if one is
// free and the scheduler is not busy (as a gate's waiter would: slots.go),
// and reports whether it did. Called with mu held; returns with it
// released if it slept.
func (l *ReadyList) sleepLocked() bool {
	sh := l.slots
	if sh == nil || sh.runnable.Load() >= sh.procs {
		return false
	}
	s := sh.parkSlots.get()
	if s == nil {
		return false
	}
	s.list, s.listWoken = l, false
	l.sleepers = append(l.sleepers, s)
	l.mu.Unlock()
	sh.stats.parks.Add(1)
	sh.stats.parksInSlot.Add(1)
	_ = s.rc.Read(s.listWokenFn)
	l.mu.Lock()
	if !s.listWoken { // the Read failed: withdraw
		for i, x := range l.sleepers {
			if x == s {
				l.sleepers = append(l.sleepers[:i], l.sleepers[i+1:]...)
				break
			}
		}
	}
	s.list = nil
	l.mu.Unlock()
	sh.parkSlots.put(s)
	return true
}

// remove unlinks d's reports, read and write.
func (l *ReadyList) remove(d *Desc) {
	l.mu.Lock()
	kept := l.items[:0]
	for _, r := range l.items {
		if r.d != d {
			kept = append(kept, r)
		}
	}
	clear(l.items[len(kept):])
	l.items = kept
	l.mu.Unlock()
}

// Next returns the cookie of the next descriptor that became readable,
// waiting until one does, ctx is done or the list is closed. On a list
// with write interest (WatchWrite) it returns write reports too: NextEvent
// tells them apart. A nil ctx is context.Background().
func (l *ReadyList) Next(ctx context.Context) (any, error) {
	cookie, _, err := l.NextEvent(ctx)
	return cookie, err
}

// NextEvent is Next, also saying whether the report is of room to write.
// A nil ctx is context.Background().
func (l *ReadyList) NextEvent(ctx context.Context) (cookie any, write bool, err error) {
	if l == nil {
		return nil, false, errNoList
	}
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, false, ErrListClosed
		}
		var r report
		if len(l.items) > 0 {
			r = l.items[0]
			l.items[0] = report{}
			l.items = l.items[1:]
			if len(l.items) > 0 {
				l.wakeOneLocked() // more for another Next
			}
		}
		d := r.d
		if d == nil && l.bubble != 0 && l.durableLocked(ctx) {
			if err := l.sleepDurably(ctx); err != nil {
				return nil, false, err
			}
			continue
		}
		if d == nil && ctx.Done() == nil && l.sleepLocked() {
			continue
		}
		notify := l.notifyLocked()
		l.mu.Unlock()
		if d == nil {
			select {
			case <-notify:
				continue
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-realClockAfter(ctx): // a bubble that cannot idle: ready_bubble.go
				return nil, false, context.DeadlineExceeded
			}
		}
		d.mu.Lock()
		w := d.watchLocked()
		queued := w != nil && (r.write && w.writeQueued || !r.write && w.queued)
		if !queued || w.list != l || d.is(descClosing) {
			d.mu.Unlock() // unwatched or closed since it was queued
			continue
		}
		if r.write {
			w.writeQueued = false
		} else {
			w.queued = false
		}
		cookie = w.cookie
		d.mu.Unlock()
		return cookie, r.write, nil
	}
}

// Len reports how many reports are queued: a descriptor reported both
// readable and writable (WatchWrite) counts twice.
func (l *ReadyList) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.items)
}

// Close wakes every Next with ErrListClosed. Watched descriptors stay
// watched until Unwatch or their own close.
func (l *ReadyList) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.notifyLocked())
		for len(l.sleepers) > 0 || len(l.durables) > 0 {
			l.wakeOneLocked()
		}
	}
	l.mu.Unlock()
}
