//go:build linux

package pollfd

// The gate protocol.
//
// A Desc has two gates, one per direction. Everything a gate holds is
// guarded by the Desc's mutex mu; nothing on a gate is read without it.
//
//	ready    an epoll edge arrived for this direction and nobody has
//	         consumed it yet. Set by the drain loop (or a harvesting
//	         waiter) even when no one waits, so an edge that lands between
//	         a syscall's EAGAIN and the park is kept, not lost. Cleared by
//	         Prepare (before the syscall) and consumed by Wait.
//	waiting  a goroutine has committed to park (park.go tells the park):
//	         on sema (a binary semaphore: the runtime's own park,
//	         sema_runtime.go), on the wake channel if it also selects on a
//	         context (selected), or in a park slot (inSlot). A waker clears
//	         it, and the waker that
//	         clears it is the one that gives the single token on the park's
//	         medium: one park, at most one token. The only other clearer is
//	         the waiter itself, withdrawing a park no waker has claimed (its
//	         context ended, or its slot's Read failed): then no token comes.
//	selected the park is a select on the gate's wake channel and a
//	         context's Done channel (ctxwait.go). Set with waiting, cleared
//	         by the woken waiter.
//	inSlot   the waiter parks in a park slot instead, in the runtime's
//	         poller (Options.RuntimePark; slots.go). Set with waiting and
//	         the slot, both cleared by the waker that clears waiting, or by
//	         the waiter withdrawing.
//	durable  the park is durable, in a synctest bubble (bubble.go): chosen
//	         by settleLocked, under mu, right before the park; an edge
//	         never wakes it, the bubble's goroutines do (and Close, a
//	         deadline, a context, from anywhere).
//	woken    set by the waker that clears waiting, which also adds one to
//	         the shard's runnable count; cleared, and the count taken back,
//	         by the waiter when it runs again (resumedLocked), whatever it
//	         parked on. The count is what lets a harvest tell that woken
//	         waiters are still queued (strategy.go, harvestNow).
//	expired  the deadline has passed; sticky until the next SetDeadline on
//	         this direction (deadline.go).
//	dl       the deadline's timer and its generation (gateTimer,
//	         deadline.go), made by the gate's first deadline in the future.
//
// The Desc adds its state bits, written under mu and read under it, but
// for inSet:
//
//	closing  set once by Unblock, never cleared.
//	closed   set once by Close.
//	eventErr the last event was exactly EPOLLERR; any other event clears it.
//	hungUp   an event carried EPOLLRDHUP, EPOLLHUP or EPOLLERR: the peer
//	         shut down its writing, hung up or left an error, which a
//	         read after the data will find. Set by deliver, never cleared:
//	         none of these ends. Read without mu (hungUp).
//	bubble   opened in a synctest bubble; durable: its waits may park
//	         durably (bubble.go). Set under mu; durable cleared by
//	         neverDurable.
//	inSet    the descriptor is in the epoll set: from Open on, or, opened
//	         with OpenLazy, from its first wait or watch (join), set right
//	         after the EPOLL_CTL_ADD; Close deletes it from the set only
//	         then. A wait reads it without mu, to join before it harvests.
//
// What few descriptors need is kept out of the Desc: the wake channel and
// the slot are the gate's altPark, in the Desc's descExt with a
// ReadyList's watch, and a deadline's timer is in the gateTimer. A Desc
// without them stays small (TestDescSize): an idle server holds one per
// connection.
//
// Transitions of one gate, each made under mu:
//
//	Prepare      closing → ErrClosing; expired → ErrTimeout; read && eventErr
//	             → ErrNotPollable; otherwise ready = false.
//	WaitContext  Wait, but the context, through a context.AfterFunc
//	             callback registered once per gate and context, is one more
//	             waker: under mu, waiting still set → clear it, mark the
//	             park canceled, send the token; the woken waiter returns
//	             ctx.Err() unless the token also found ready or an error
//	             (ctxwait.go).
//	Wait         the same error checks as Prepare (an error beats a Ready
//	             left from before, as in the runtime's pollWait); then, and
//	             after every wake: ready → consume it, return nil (Ready is
//	             consumed first); else the error checks again; else park
//	             (park.go: waiting = true, unlock, sleep on the medium;
//	             relock, clear woken); then start over.
//	edge         ready = true; if waiting: waiting = false, woken = true,
//	             send on wake; else, if a ReadyList watches the read side
//	             and it is armed, queue it there (ready.go).
//	timer fires  if its generation is current: expired = true; if waiting:
//	             waiting = false, woken = true, send on wake (no ready).
//	SetDeadline  in the past: expired = true and wake a waiter (no ready);
//	             in the future or cleared: wake nobody.
//	Unblock      closing = true; wake both waiters (no ready).
//	kick         one gate's edge without an event (the fault layer's
//	             wake-up): ready = true; if waiting, woken as by an edge.
//
// Why each race is safe:
//
//   - Edge versus park. Wait re-checks ready under mu after deciding to park
//     and publishes waiting under the same lock acquisition, and the drain
//     loop sets ready and reads waiting under mu. So either the edge is seen
//     before parking (consumed, no park) or the waker sees waiting and gives
//     the token; the park then cannot miss it: every medium keeps a token
//     given before its waiter sleeps (park.go).
//   - Close/deadline versus park. Same argument: closing and expired are
//     written under mu and checked under mu right before waiting is set.
//   - A wake without ready (deadline moved into the past, then back into the
//     future before the waiter runs) finds no error on re-check; the waiter
//     parks again, which is what the runtime does (netpoll.go pollWait).
//   - Lost edges. Prepare clears ready before the syscall; the syscall only
//     reaches Wait after EAGAIN, and after EAGAIN any readiness is a new
//     edge, which either sets ready before Wait looks or wakes it after. An
//     edge cleared by Prepare announced something the syscall then sees.
//   - One waiter per direction. The fd layer's read and write locks
//     serialise waiters, so no second consumer can steal an edge. Wait still
//     refuses a second concurrent waiter (ErrDoubleWait) rather than
//     corrupting the gate: one that comes while the first is parked
//     (waiting) or woken and not yet run (woken), since the first one's
//     resume would otherwise take the second's token or withdraw its park.
//   - Cancellation versus wake. The context's callback is a waker like the
//     others: it needs waiting, clears it and sends the one token under mu,
//     so whichever of it and an edge, a deadline or Unblock comes first
//     wakes the park and the other finds nothing to do; no stale token is
//     left to wake a later park early. A context that ends before the park
//     is seen under mu (ctx.Err() is set before callbacks start).
//   - Late edges. An edge can be delivered after the bytes it announced
//     were read (the drain loop lags the syscall); a later Wait then
//     returns at once, the retried syscall sees EAGAIN and Wait parks: a
//     spurious wake-up, harmless, exactly as with the runtime's poller.
//   - Joining late. A lazy Desc joins the epoll set when it first waits
//     (or is watched), after its syscall saw EAGAIN, and before the
//     harvest; EPOLL_CTL_ADD queues an event at once if the descriptor is
//     ready by then, so readiness that arrived between the EAGAIN and the
//     join is an edge like any other, which that harvest or the drain
//     loop delivers. Before the join no event can name the Desc, so none
//     is missed: Prepare clears ready anyway. A join cannot follow Close:
//     it needs closing unset, under mu, and Close needs it set. Two
//     waiters (a reader and a writer) joining at once serialise on mu and
//     the second finds inSet.
//   - Stale events. The drain loop finds a Desc by token (table.go); once
//     Close has removed it, its events are dropped, and a reused fd number
//     gets a new token.
//   - The runnable count. Every wake that clears waiting sets woken and
//     adds one; the waiter, which every wake lets run, clears woken and
//     takes the one back the first time it holds mu again. A second wake
//     needs waiting, which the waiter sets only after that, so a gate owes
//     the count at most one; a waiter that withdraws does so only while no
//     waker has claimed it (woken is still false). So the count returns to
//     zero whenever every woken waiter has run. Harvests read it without
//     mu: a stale read only makes one harvest early or late.
//
// The wake path allocates nothing, and neither does a plain park: the
// semaphore is a word in the gate (in race builds a channel, made on the
// first park under mu and reused). A park that selects makes the gate's
// wake channel once.
//
// Stack depth (docs/DESIGN.md, "Stack depth", states the rule for the
// whole package). A goroutine parked here for an idle connection keeps on
// its stack the deepest frames it reached, and a 2 KiB stack that
// overflows doubles for good. So the path from the fd layer's wait to the
// park is a few small frames: a wait loop (wait, or waitCancelable for
// waits a context can cancel), then parkLocked (park.go), whose steps
// that need room run as calls before and after the sleep; the harvest
// runs before wait, from Wait, on a buffer of the shard's rather than the
// stack. The park itself is the runtime's gopark, as net's is: no sudog
// to allocate (a channel receive needs one, deeper still when the P's
// cache of them is empty). TestParkedStackDepth measures the headroom a
// goroutine parked in WaitRead or Read leaves its caller's frames, and
// docs/DESIGN.md gives it beside net's. A context's first wait on a gate
// registers it (ctxwait.go), allocating on this stack: that one can go
// deeper.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/pollhook"
)

func init() {
	pollhook.Kick = (*Desc).kick
	pollhook.HungUp = (*Desc).hungUp
}

// Desc.state bits (see the top of this file).
const (
	descClosing uint32 = 1 << iota
	descClosed
	descEventErr
	descInSet
	descBubble  // opened in a synctest bubble (bubble.go)
	descDurable // its waits may park durably (bubble.go)
	descHungUp
)

// is reports whether state bit b is set.
func (d *Desc) is(b uint32) bool { return d.state.Load()&b != 0 }

// setLocked sets state bit b to on. Called with mu held, so a plain load
// and store suffice; it stores only on a change (deliver calls it for
// every event).
func (d *Desc) setLocked(b uint32, on bool) {
	s := d.state.Load()
	n := s &^ b
	if on {
		n |= b
	}
	if n != s {
		d.state.Store(n)
	}
}

type gate struct {
	ready    bool
	waiting  bool
	expired  bool
	selected bool       // the current park is on the altPark's wake, not sema
	inSlot   bool       // the current park is in the altPark's slot (slots.go)
	woken    bool       // a waker cleared waiting; the waiter has not run since (shard.runnable)
	durable  bool       // the current park is durable, on the altPark's durableSema (bubble.go)
	sema     parkSema   // the plain park (sema_runtime.go)
	dl       *gateTimer // the deadline's timer (deadline.go); made by the first deadline in the future
}

// Desc is one registered descriptor. The zero value is not usable; get one
// from (*Poller).Open.
type Desc struct {
	shard *shard // set by open; moved only by moveToShard, before anything else refers to it (place.go)
	token uint64 // set by table.insert before publication, and again by moveToShard
	fd    int32

	state  atomic.Uint32 // descClosing, descClosed, descEventErr, descInSet, descBubble, descDurable
	mu     sync.Mutex
	rg, wg gate
	ext    *descExt // made on first use (see the top of this file)
	ctx    *descCtx // context registrations (ctxwait.go)
}

// descExt holds what few descriptors need: a ReadyList's watch and the
// media of parks that are not plain. Guarded by mu; made under it on first
// use and kept. (A gate's deadline timer is apart, in gateTimer.)
type descExt struct {
	watch  watch // ReadyList membership (ready.go); list nil: not watched
	r, w   altPark
	peer   *Desc  // the other end, in a synctest bubble (bubble.go)
	bubble uint64 // the bubble d was opened in (descBubble); set before d is published
	dgram  *dgram // a datagram socket of the bubble (bubble_dgram.go)
}

// altPark is a gate's park media other than its semaphore.
type altPark struct {
	wake chan struct{} // a park that selects on a context too; capacity 1, made on first use
	slot *parkSlot     // the slot of the current park in the runtime's poller (slots.go)
	// durable is a durable park's medium (bubble.go, sema_durable.go).
	durable durableSema
}

// extLocked returns d's descExt, making it. Called with mu held.
func (d *Desc) extLocked() *descExt {
	if d.ext == nil {
		d.ext = new(descExt)
	}
	return d.ext
}

// altLocked returns g's altPark, making the descExt. Called with mu held.
func (d *Desc) altLocked(g *gate) *altPark {
	x := d.extLocked()
	if g == &d.rg {
		return &x.r
	}
	return &x.w
}

// watchLocked returns d's watch if a ReadyList watches it, else nil.
// Called with mu held.
func (d *Desc) watchLocked() *watch {
	if d.ext == nil || d.ext.watch.list == nil {
		return nil
	}
	return &d.ext.watch
}

// errNotOpened is every method's error on a nil Desc or one Open did not
// make, as os's on a nil *os.File: errors.Is(err, os.ErrInvalid) holds.
var errNotOpened = fmt.Errorf("pollfd: Desc not made by Open: %w", os.ErrInvalid)

// unopened reports whether d is nil or was not made by Open (a zero Desc):
// its methods then return errNotOpened, or do nothing, and never panic.
func (d *Desc) unopened() bool { return d == nil || d.shard == nil }

// Fd returns the descriptor number the Desc was opened for; -1 for a nil
// Desc or one Open did not make.
func (d *Desc) Fd() int {
	if d.unopened() {
		return -1
	}
	return int(d.fd)
}

// Shard returns the index of the poller shard the descriptor is on; -1
// for a nil Desc or one Open did not make.
func (d *Desc) Shard() int {
	if d.unopened() {
		return -1
	}
	return d.shard.index
}

// Poller returns the poller the descriptor is registered with; nil for a
// nil Desc or one Open did not make.
func (d *Desc) Poller() *Poller {
	if d.unopened() {
		return nil
	}
	return d.shard.poller
}

func (d *Desc) gate(mode Mode) *gate {
	switch mode {
	case ModeRead:
		return &d.rg
	case ModeWrite:
		return &d.wg
	}
	return nil
}

// check is netpollcheckerr: closing beats timeout beats an event error,
// and the event error concerns reads only. Called with mu held.
func (d *Desc) check(mode Mode, g *gate) error {
	if d.is(descClosing) {
		return ErrClosing
	}
	if g.expired {
		return ErrTimeout
	}
	if mode == ModeRead && d.is(descEventErr) {
		return ErrNotPollable
	}
	return nil
}

// Prepare readies the descriptor for an I/O attempt in mode (ModeRead or
// ModeWrite): it fails fast on closing, an expired deadline or (reads) an
// event error, and otherwise forgets any earlier edge, because the syscall
// the caller makes next observes that readiness directly. It mirrors the
// runtime's pollReset.
func (d *Desc) Prepare(mode Mode) error {
	if d.unopened() {
		return errNotOpened
	}
	g := d.gate(mode)
	if g == nil {
		return ErrInvalidMode
	}
	d.mu.Lock()
	err := d.check(mode, g)
	if err == nil {
		g.ready = false
	}
	d.mu.Unlock()
	return err
}

// Wait parks until the descriptor is ready in mode (ModeRead or ModeWrite),
// its deadline expires, or it is unblocked. It fails at once, as Prepare
// does, on closing, an expired deadline or (reads) an event error;
// otherwise an edge that arrived since Prepare is consumed first and Wait
// returns at once. It mirrors the runtime's pollWait, including re-parking
// after a wake that found neither readiness nor an error.
func (d *Desc) Wait(mode Mode) error {
	if d.unopened() {
		return errNotOpened
	}
	if err := d.joined(mode); err != nil {
		return err
	}
	return d.wait(mode, d.harvest())
}

// harvest, before a wait, collects whatever the kernel has ready, for this
// and other descriptors, on this thread: the scheduler then runs a woken
// goroutine without a cross-thread wake-up (strategy.go). While waiters
// the shard woke are still queued it harvests nothing, since a harvest
// would jump them (harvestNow); and it reports busy when there are as many
// of them as Ps, so that the wait that follows parks on its gate, not in a
// park slot (slots.go says why). The callers run it before they descend
// into wait, to keep the parked stack shallow.
func (d *Desc) harvest() (busy bool) {
	if d.is(descClosing) {
		return false // the wait fails at once; the shard may be closing too
	}
	if n := d.shard.runnable.Load(); n > 0 {
		if d.shard.harvest {
			d.shard.stats.harvestsDeferred.Add(1)
		}
		return n >= d.shard.procs
	}
	if d.shard.harvest {
		d.shard.harvestNow()
	}
	return false
}

// WaitContext is Wait that also returns when ctx is done, with ctx's
// error. It starts no goroutine and no timer per call (registering a
// context that comes back takes one short-lived goroutine, once:
// ctxwait.go), and it leaves the deadlines alone: the descriptor stays
// usable. A context already done when WaitContext is called returns its
// error without waiting; a nil ctx is context.Background(), as
// ReadyList.Next's.
func (d *Desc) WaitContext(ctx context.Context, mode Mode) error {
	if d.unopened() {
		return errNotOpened
	}
	if ctx == nil {
		ctx = context.Background()
	}
	done := ctx.Done()
	if done != nil {
		select {
		case <-done:
			return ctx.Err()
		default:
		}
	}
	if err := d.joined(mode); err != nil {
		return err
	}
	if done == nil {
		return d.wait(mode, d.harvest()) // not Wait: one frame less under the park
	}
	d.harvest()
	if err := d.waitCancelable(ctx, mode); err != errDone {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return context.DeadlineExceeded // its deadline passed on the real clock, not yet on its bubble's (bubble.go)
}

// errDone reports that waitCancelable's context ended the wait.
var errDone = errors.New("pollfd: wait abandoned")

// wait is Wait; busy is what harvest reported: a busy scheduler gets no
// park slot (slots.go). Waits a context can cancel are
// waitCancelable's (ctxwait.go).
func (d *Desc) wait(mode Mode, busy bool) error {
	g, err := d.beginWait(mode)
	if err != nil {
		return err
	}
	for {
		if done, err := d.settleLocked(mode, g); done {
			d.mu.Unlock()
			return err
		}
		var s *parkSlot
		switch {
		case g.dl != nil && g.dl.fake:
			s = d.realClockSlotLocked(g) // a deadline set in a bubble (bubble.go)
		case d.shard.runtimePark && !busy && !g.durable:
			s = d.shard.parkSlots.get()
		}
		d.parkLocked(g, s, nil)
	}
}

// beginWait returns mode's gate with mu held, unless the wait fails at
// once. pollWait checks for errors before it looks at the semaphore: on a
// closing descriptor, or with the deadline expired, a leftover Ready does
// not let Wait return nil (deadline expiry is sticky).
func (d *Desc) beginWait(mode Mode) (*gate, error) {
	g := d.gate(mode)
	if g == nil {
		return nil, ErrInvalidMode
	}
	d.mu.Lock()
	if err := d.check(mode, g); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	return g, nil
}

// settleLocked is what a wait does before each park: consume a Ready
// (done, nil), or fail (done, err) on an error or a second waiter;
// otherwise the wait must park. Called with mu held.
func (d *Desc) settleLocked(mode Mode, g *gate) (done bool, err error) {
	if g.waiting || g.woken {
		// Another waiter is parked, or woken and not yet run: its resume
		// would take this one's token or withdraw its park.
		return true, ErrDoubleWait
	}
	if g.ready {
		g.ready = false
		return true, nil
	}
	if err := d.check(mode, g); err != nil {
		return true, err
	}
	if w := d.watchLocked(); w != nil && g == &d.rg && !w.queued {
		w.armed = true // a read hit EAGAIN: the next edge is news (ready.go)
	}
	g.durable = false
	if d.is(descDurable) && d.durableLocked(mode, g) {
		return true, nil // ready after all: retry the system call
	}
	return false, nil
}

// deliver records an epoll event for d: the drain loop's (and a harvesting
// waiter's) half of the protocol, and returns how many waiters it woke.
// It mirrors netpollready.
//
// The event is counted under mu before anyone is woken, as the wake-ups
// are: whoever the event wakes, and whoever then looks at the gate, sees it
// in Stats.Events, and a Stats baseline taken after a wake-up is never
// overtaken by the event that caused it.
func (d *Desc) deliver(events uint32) (woke int) {
	d.mu.Lock()
	d.shard.stats.events.Add(1)
	d.setLocked(descEventErr, events == unix.EPOLLERR)
	if events&hangUpEvents != 0 {
		d.setLocked(descHungUp, true)
	}
	if events&readEvents != 0 {
		d.rg.ready = true
		if d.wakeEdgeLocked(&d.rg) || (d.is(descDurable) && d.fromOutsideLocked(&d.rg) && d.wakeLocked(&d.rg)) {
			woke++
			if w := d.watchLocked(); w != nil {
				w.armed = false // the parked reader owns this edge
			}
		} else {
			d.reportLocked()
		}
	}
	if events&writeEvents != 0 {
		d.wg.ready = true
		if d.wakeEdgeLocked(&d.wg) {
			woke++
		} else {
			d.reportWriteLocked()
		}
	}
	if woke > 0 { // counted under mu: the woken waiter sees it
		d.shard.stats.wakeupsEvent.Add(uint64(woke))
	}
	d.mu.Unlock()
	return woke
}

// hungUp reports whether an event said the peer shut down its writing,
// hung up or left an error (descHungUp): a short read of a stream then
// does not mean that nothing is left to read, since the end of stream or
// the error is still to come, with no new edge to announce it
// (internal/poll's noteDrained).
func (d *Desc) hungUp() bool { return d.is(descHungUp) }

// kick wakes mode's waiter as an edge would, with no event behind it: the
// waiter retries its system call, which may find nothing and park again,
// as after any spurious wake-up (contract 5). With no waiter the edge is
// kept for the next Wait and reported to a ReadyList watching d, as an
// event's is (deliver): a worker that never parks learns of it there. The
// fault layer (internal/poll) uses it, through internal/pollhook, to end a
// delay it injected and to inject spurious wake-ups; it is not an event,
// so Stats counts it apart (WakeupsKick).
func (d *Desc) kick(mode Mode) {
	d.mu.Lock()
	g := d.gate(mode)
	g.ready = true
	switch {
	case d.wakeEdgeLocked(g):
		d.shard.stats.wakeupsKick.Add(1)
		if w := d.watchLocked(); w != nil && g == &d.rg {
			w.armed = false // the parked reader owns this edge
		}
	case g == &d.rg:
		d.reportLocked()
	default:
		d.reportWriteLocked()
	}
	d.mu.Unlock()
}

// Unblock marks the descriptor closing and wakes both waiters without
// readiness; each returns ErrClosing, and so does every later Prepare and
// Wait. Pending deadlines are cancelled. It mirrors pollUnblock and must
// precede Close. A second call does nothing.
func (d *Desc) Unblock() {
	if d.unopened() {
		return
	}
	woke := 0
	d.mu.Lock()
	if d.is(descClosing) {
		d.mu.Unlock()
		return
	}
	d.setLocked(descClosing, true)
	d.unwatchLocked()
	for _, g := range [2]*gate{&d.rg, &d.wg} {
		g.dl.cancel()
		if d.wakeLocked(g) {
			woke++
		}
	}
	if woke > 0 { // counted under mu: the woken waiter sees it
		d.shard.stats.wakeupsClose.Add(uint64(woke))
	}
	stops := d.stopContextsLocked()
	d.mu.Unlock()
	for _, stop := range stops {
		if stop != nil {
			stop()
		}
	}
}

// Close removes the descriptor from the epoll set (EPOLL_CTL_DEL, if it
// joined it) and from the token table. It does not close the fd: the
// caller does, afterwards, so the number is not reused while it is still
// registered. Close requires a prior Unblock and no parked waiter (the
// runtime throws for both; this returns ErrNotClosing or ErrWaiters). A
// second Close returns ErrClosing.
func (d *Desc) Close() error {
	if d.unopened() {
		return errNotOpened
	}
	d.mu.Lock()
	switch {
	case !d.is(descClosing):
		d.mu.Unlock()
		return ErrNotClosing
	case d.rg.waiting || d.wg.waiting:
		d.mu.Unlock()
		return ErrWaiters
	case d.is(descClosed):
		d.mu.Unlock()
		return ErrClosing
	}
	d.setLocked(descClosed, true)
	inSet := d.is(descInSet)
	d.mu.Unlock()
	s := d.shard
	// The errno is ignored as the runtime ignores netpollclose's: the fd may
	// already be gone from the set (closed elsewhere, or a dup still open).
	if inSet {
		_ = unix.EpollCtl(s.epfd, unix.EPOLL_CTL_DEL, int(d.fd), &unix.EpollEvent{})
	}
	s.table.remove(d)
	if s.stats.registered.Add(-1) == 0 {
		s.loop.unregistered(s)
	}
	return nil
}
