//go:build linux

package pollfd

// Durable parks: fake time for real descriptors in a testing/synctest
// bubble.
//
// A bubble's clock moves only when every goroutine in it is durably
// blocked: blocked on something that only another goroutine of the bubble
// can end (a channel made in it, a timer of its clock, a sync.Cond). A
// goroutine parked on a gate is not, since the drain loop (outside every
// bubble) wakes it when the kernel reports readiness; so a bubble that
// waits on I/O never idles, and its deadlines never fire. The runtime
// cannot do better for net's descriptors, because it cannot know who will
// make them ready. gatenet can, for the descriptors it made: it knows both
// ends of a connection or a pipe, and it makes every system call on them.
//
// The rule. A wait parks durably when all of these hold (durableLocked,
// under mu, in the same lock acquisition as the park, right after
// settleLocked found nothing to consume):
//
//   - d is durable: opened in a bubble (descBubble, with the bubble's id in
//     descExt.bubble) and then either paired with its peer, the other end
//     of the same loopback connection or pipe, opened in the same bubble
//     (pair: the root package finds the two ends), or a listener of the
//     bubble that a dial of the bubble has reached (acceptDurably);
//   - the waiting goroutine is in d's bubble (currentBubble): a wait from
//     another bubble or from outside every bubble is an ordinary one, as
//     over net, and it unpairs d (below);
//   - the gate's deadline, if armed, is on a timer of d's bubble's clock;
//   - poll(2) with a zero timeout says the descriptor is not ready in
//     mode: nothing is pending in the kernel;
//   - nothing is in flight towards it that the kernel has not delivered
//     (inFlight: on TCP, bytes the peer sent that d has not received, or,
//     for a write, segments d sent that are not yet acknowledged while the
//     peer has nothing left to read, whose read would acknowledge them).
//
// Otherwise the wait parks as outside a bubble, and the drain loop wakes it.
//
// The medium. A durable park sleeps on the gate's durableSema
// (sema_durable.go): the runtime's gopark with a wait reason the bubble
// counts as durable, readied by goready, which any goroutine may call. So
// a Close, a deadline set or fired outside the bubble, a context
// cancelled outside it, or I/O from another bubble wakes the park at once;
// none of them can crash the process, as a send on a channel of the
// bubble from outside it would.
//
// Who wakes a durable park. The drain loop and a harvest never do
// (wakeEdgeLocked): the edge they see is recorded in ready, as ever, since
// the bubble counts on its own goroutines to make d ready. They do: after
// each system call that may make a
// peer ready — a read (room for the peer's writes), a write (data), a
// shutdown or close (end of stream) — the descriptor layer calls wakePeer,
// which wakes the peer's durable waiter in the other direction; a dial
// wakes the listener it reached (wakeDurable); and deadlines set in the
// bubble, contexts cancelled in it and Close by its goroutines wake as
// they always do. A Close or a deadline from outside wakes as ever; a
// deadline set outside is on the real clock, and wakes a durable waiter
// to park again as an ordinary one, which that clock's timer can end. An
// end the program dropped is closed by the collector, whose goroutine is
// outside every bubble: its wakePeer unpairs, and the peer's waiter parks
// again as an ordinary one, which the close's edge ends.
//
// Unpairing. A descriptor used from outside its bubble — a wait, or a
// wake of a durable park by a goroutine of another bubble or of none —
// or whose number has left gatenet (Fd, File, a dup, a RawConn: Unpair)
// stops being durable for good, and so does its peer, whose bytes can now
// come from a goroutine the bubble does not know. Each side's durable
// waiter is woken to park again as an ordinary one (repark). A durable
// park made before that first outside use is woken by it: if the bubble
// was idle meanwhile its clock moved on, as it would had the outside use
// come later.
//
// Why no wake is lost. The waker's system call happens before its wake,
// and both the wake and the waiter's poll(2) run under the peer's mu: a
// wake that comes before the waiter's lock acquisition finds the kernel
// already ready when the waiter polls; one that comes after finds waiting
// set and the park durable, and gives the token. So a write in a bubble
// has woken its reader before the writer can block on anything, and the
// bubble is never idle while a reader could run.
//
// Why the kernel can be trusted to be done. On a Unix socket and a pipe,
// write(2) queues the data on the reader's side before it returns. On TCP
// over loopback the segment is handed to the loopback device, whose
// receive work runs as a softirq on the writer's own CPU when the send
// path re-enables bottom halves, still inside write(2): by the time the
// writer wakes the peer, the bytes are readable. Only when softirqs are
// overloaded does the kernel defer them to ksoftirqd; inFlight sees that
// case (TCP_INFO: bytes sent against bytes received, unacknowledged
// segments) and the wait parks non-durably, so the drain loop delivers the
// late edge. What inFlight cannot see is a connection still in the
// listener's handshake and a FIN still in flight; docs/DESIGN.md says what
// follows if either is ever deferred.
//
// A descriptor whose peer is outside the bubble — another process, a
// descriptor made outside it or by net, a file from NewFile — is never
// paired, so it never parks durably: its bubble does not idle while it
// waits, as with net. A listener of a bubble parks durably once a dial of
// the bubble has reached it; a connection from outside the bubble is then
// accepted when a goroutine of the bubble next wakes it (its next dial, a
// deadline, Close), which is why such a listener is for the bubble's
// dials.

import (
	"bytes"
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/pollhook"
	"github.com/gatenet/gatenet/internal/realclock"

	"github.com/gatenet/gatenet/internal/bubble"
)

func init() {
	pollhook.Unpair = (*Desc).handedOut
	pollhook.InBubble = (*Desc).openedInBubble
	pollhook.Pair = pair
	pollhook.AcceptDurably = (*Desc).acceptDurably
	pollhook.Durable = (*Desc).durable
	pollhook.NeverDurable = (*Desc).neverDurable
	pollhook.WakePeer = (*Desc).wakePeer
	pollhook.WakeDurable = (*Desc).wakeListener
}

// currentBubble returns the id of the calling goroutine's bubble, or 0
// outside every bubble. The runtime tells a goroutine's bubble only in the
// header of its stack trace ("goroutine 7 [running, synctest bubble 3]"),
// and runtime.Stack walks the whole stack to print it: about 2 µs on a
// shallow stack, tens on a deep one. So it is asked only in a bubble, and
// only where a durable park is at stake: at Open, as a durable park is
// decided, and as one is woken. A header it cannot read (a runtime that
// changed the format) gives 0: nothing is durable, as over net
// (TestCurrentBubble pins the format).
func currentBubble() uint64 {
	if !bubble.In() {
		return 0
	}
	var buf [96]byte
	b := buf[:runtime.Stack(buf[:], false)]
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	const tag = ", synctest bubble "
	i := bytes.Index(b, []byte(tag))
	if i < 0 {
		return 0
	}
	var id uint64
	for _, c := range b[i+len(tag):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// bubbleOf is the bubble d was opened in; 0 if none. Called with mu held
// or after open (descExt.bubble is set before d is published).
func (d *Desc) bubbleOf() uint64 {
	if !d.is(descBubble) || d.ext == nil {
		return 0
	}
	return d.ext.bubble
}

// openedInBubble reports whether d was opened in a bubble.
func (d *Desc) openedInBubble() bool { return d.is(descBubble) }

// pair makes a and b, the two ends of one connection or pipe, each other's
// peer, if both were opened in a bubble, and reports whether it did. From
// then on their waits may park durably.
func pair(a, b *Desc) bool {
	if a == b || !durableParks || a.bubbleOf() == 0 || a.bubbleOf() != b.bubbleOf() {
		return false
	}
	a.setPeer(b)
	b.setPeer(a)
	return true
}

// setPeer makes p d's peer. A waiter parked already, before the pairing
// (a dialled end's first read can come before its peer is accepted), is
// woken to park again, durably this time.
func (d *Desc) setPeer(p *Desc) {
	d.mu.Lock()
	if !d.is(descClosing) {
		d.extLocked().peer = p
		d.setLocked(descDurable, true)
		d.repark()
	}
	d.mu.Unlock()
}

// repark wakes both gates' waiters without readiness, so that each
// settles again and parks by the current rule: after d has become durable,
// or stopped being so. Called with mu held.
func (d *Desc) repark() {
	d.wakeLocked(&d.rg)
	d.wakeLocked(&d.wg)
}

// acceptDurably marks d, a listening socket opened in a bubble, as one
// whose accepts park durably (see the top of this file).
func (d *Desc) acceptDurably() {
	d.mu.Lock()
	if durableParks && d.is(descBubble) && !d.is(descClosing) && currentBubble() == d.bubbleOf() {
		d.setLocked(descDurable, true)
		d.repark()
	}
	d.mu.Unlock()
}

// durable reports whether d's waits park durably now, by the first rule
// above: paired, or a listener or datagram socket a send or dial of its
// bubble has reached, and not used from outside since.
func (d *Desc) durable() bool { return d.is(descDurable) }

// neverDurable makes d park as outside a bubble from now on: the fault
// layer's delays end on timers of the real clock.
func (d *Desc) neverDurable() {
	d.mu.Lock()
	d.setLocked(descDurable, false)
	d.repark()
	d.memberNotDurable()
	d.mu.Unlock()
}

// wakePeer is called after a system call on d in mode succeeded: it wakes
// the durable waiter of d's peer that the call may have made ready — the
// reader after a write, the writer after a read, both after a shutdown or
// a close (ModeReadWrite). After d is closed the pairing is dropped; after
// d stopped being durable (used from outside its bubble, its number handed
// out, faults attached), the peer is unpaired too (see the top of this
// file), and so is d if the wake itself came from outside the peer's
// bubble.
func (d *Desc) wakePeer(mode Mode) {
	if d.is(descDurable) && currentBubble() != d.bubbleOf() {
		d.unpairBoth() // used from outside its bubble: each side's durable waiter parks again
		return
	}
	var p *Desc
	d.mu.Lock()
	closed, tainted := d.is(descClosed), !d.is(descDurable)
	if d.ext != nil {
		p = d.ext.peer
		if closed || tainted {
			d.ext.peer = nil
		}
	}
	d.mu.Unlock()
	if p == nil {
		return
	}
	if tainted && !closed {
		p.unpair()
		return
	}
	switch mode {
	case ModeRead:
		mode = ModeWrite
	case ModeWrite:
		mode = ModeRead
	default:
		mode = ModeReadWrite
	}
	if p.wakeDurable(mode) {
		d.unpair()
		p.unpair()
	}
}

// wakeDurable wakes d's durable waiters in mode, as an edge would: they
// retry their system calls. A waiter that is not parked durably needs no
// wake from here: the drain loop's edge wakes it. It reports whether it
// woke one from outside d's bubble: the caller then unpairs.
func (d *Desc) wakeDurable(mode Mode) (outside bool) {
	d.mu.Lock()
	if mode != ModeWrite {
		owned := d.rg.waiting // a parked reader owns the edge, as in deliver
		outside = d.wakeDurableLocked(&d.rg)
		d.reportDurableLocked(owned)
	}
	if mode != ModeRead {
		outside = d.wakeDurableLocked(&d.wg) || outside
		d.reportWriteDurableLocked()
	}
	d.mu.Unlock()
	return outside
}

// wakeListener is wakeDurable for a listener a dial reached: a dial from
// outside its bubble makes it an ordinary listener.
func (d *Desc) wakeListener(mode Mode) {
	if d.wakeDurable(mode) {
		d.unpair()
	}
}

func (d *Desc) wakeDurableLocked(g *gate) (outside bool) {
	if !g.waiting || !g.durable {
		return false
	}
	g.ready = true
	d.wakeLocked(g)
	return currentBubble() != d.bubbleOf()
}

// reportDurableLocked is deliver's report for a durable d that a goroutine
// of its bubble just made readable: the ReadyList watching it hears of it
// now, not when the drain loop's edge comes, so a Next asleep durably
// wakes before the bubble can idle (ready_bubble.go). A reader parked on
// d owns the edge (owned), as in deliver. Called with mu held.
func (d *Desc) reportDurableLocked(owned bool) {
	w := d.watchLocked()
	if w == nil || !d.is(descDurable) {
		return
	}
	d.rg.ready = true
	if owned {
		w.armed = false
		return
	}
	d.reportLocked()
}

// reportWriteDurableLocked is reportDurableLocked for room to write: the
// peer's read made some, and a list waiting for d's write side hears of it
// now (ready_write.go). A spurious report costs a write that finds no
// room, and a WatchWrite. Called with mu held.
func (d *Desc) reportWriteDurableLocked() {
	if w := d.watchLocked(); w != nil && w.writeArmed && d.is(descDurable) {
		d.wg.ready = true
		d.reportWriteLocked()
	}
}

// unpair makes d park as an ordinary descriptor for good and forgets its
// peer; durable waiters park again. unpairBoth does it to d's peer too:
// d's number has left gatenet (Unpair).
func (d *Desc) unpair() *Desc {
	d.mu.Lock()
	var p *Desc
	if d.ext != nil {
		p, d.ext.peer = d.ext.peer, nil
	}
	if d.is(descDurable) {
		d.setLocked(descDurable, false)
		d.repark()
		d.memberNotDurable()
	}
	d.mu.Unlock()
	return p
}

func (d *Desc) unpairBoth() {
	if p := d.unpair(); p != nil {
		p.unpair()
	}
}

// handedOut is Unpair: d's number left gatenet. A stream's ends are
// unpaired; a datagram socket stays as it is, since what reaches it by
// that number is a datagram from outside, which the drain loop's edge
// notices (bubble_dgram.go), and quic-go, say, reads and sets options
// through its RawConn.
func (d *Desc) handedOut() {
	d.mu.Lock()
	dg := d.dgramLocked()
	d.mu.Unlock()
	if dg == nil {
		d.unpairBoth()
	}
}

// durableLocked decides whether g's coming park is durable, setting
// g.durable, and reports whether poll(2) found d ready in mode already
// (the wait then returns, to retry its system call, and does not park).
// Called with mu held, for a durable d, by settleLocked.
//
//go:noinline
func (d *Desc) durableLocked(mode Mode, g *gate) (ready bool) {
	g.durable = false
	if !bubble.In() {
		return false
	}
	mine := d.bubbleOf()
	if gt := g.dl; gt != nil && gt.deadline != 0 && (!gt.fake || gt.bubble != mine) {
		return false // a deadline on another clock: the bubble could idle past it
	}
	if currentBubble() != mine {
		d.setLocked(descDurable, false) // used from outside its bubble: unpaired (wakePeer tells the peer)
		if dg := d.dgramLocked(); dg != nil {
			dg.outside = true
		}
		d.memberNotDurable()
		return false
	}
	if mode == ModeWrite && d.dgramLocked() != nil {
		return false // no goroutine of the bubble says when a datagram's send buffer drains
	}
	events := int16(unix.POLLIN | unix.POLLRDHUP)
	if mode == ModeWrite {
		events = unix.POLLOUT
	}
	if ready, err := readyNow(d.fd, events); err != nil || ready {
		return err == nil // ready; after a failed poll, park as outside a bubble
	}
	var peer *Desc
	if d.ext != nil {
		peer = d.ext.peer
	}
	if inFlight(d, peer, mode) {
		return false
	}
	g.durable = true
	return false
}

// readyNow reports whether poll(2), with a zero timeout, finds fd ready
// for events. Even a poll that does not wait fails with EINTR when a
// signal is handled during it (the runtime's preemption signal, which the
// garbage collector sends): that is retried, not taken for a failure, or
// a durable park would park as outside its bubble.
func readyNow(fd int32, events int16) (bool, error) {
	fds := []unix.PollFd{{Fd: fd, Events: events}}
	for {
		n, err := unix.Poll(fds, 0)
		if err != unix.EINTR {
			return n > 0, err
		}
	}
}

// inFlight reports whether the kernel may still be delivering something
// that would make d ready in mode: on a TCP socket, bytes its peer sent
// that d has not received (a read), or segments d sent that are not yet
// acknowledged (a write; the acknowledgement frees room). Unix sockets and
// pipes deliver within the writer's system call: nothing is ever in flight.
// A peer that closes meanwhile (its number could be reused) counts as in
// flight: the wait then parks as outside a bubble.
func inFlight(d, peer *Desc, mode Mode) bool {
	mine, err := unix.GetsockoptTCPInfo(int(d.fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return false // not TCP
	}
	if mode == ModeWrite {
		// Room comes with the acknowledgement of what d sent. The peer's
		// read sends it within the read (the window update, and a delayed
		// acknowledgement once a segment's worth is read) while the peer
		// has bytes to read: its receive queue is what is full, and its
		// read wakes d (wakePeer). With nothing left to read there, an
		// unacknowledged segment waits on the kernel's delayed-ack timer.
		if mine.Unacked == 0 {
			return false
		}
		return peer == nil || peer.is(descClosing) || !hasUnread(peer)
	}
	if peer == nil || peer.is(descClosing) {
		return peer != nil
	}
	theirs, err := unix.GetsockoptTCPInfo(int(peer.fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil || peer.is(descClosing) {
		return true
	}
	return theirs.Bytes_sent-theirs.Bytes_retrans > mine.Bytes_received
}

// hasUnread reports whether p, a TCP socket, has received bytes not yet
// read (SIOCINQ).
func hasUnread(p *Desc) bool {
	n, err := unix.IoctlGetInt(int(p.fd), unix.SIOCINQ)
	return err == nil && n > 0 && !p.is(descClosing)
}

// realClockSlotLocked returns a park slot of the park's own whose read
// deadline is g's deadline, on the real clock, for a park that is not
// durable while the deadline was set in a bubble, on its fake clock: the
// bubble does not idle while that park lasts, so its clock would never
// reach the deadline; the real clock does, as it does for net's deadlines
// in a bubble. A park outside the bubble, or in another, reads the real
// clock's share of the deadline's span (fakeDeadlineLeft). Nil, and the park takes
// none, if the park is durable (the bubble's timer wakes it) or the slot
// cannot be made. Called with mu held, by wait.
func (d *Desc) realClockSlotLocked(g *gate) *parkSlot {
	gt := g.dl
	if g.durable || gt.deadline == 0 {
		return nil
	}
	s, err := newParkSlot()
	if err != nil {
		return nil
	}
	left := fakeDeadlineLeft(gt)
	// os.File deadlines are the runtime poller's, on the real clock: it
	// measures left from the bubble's now.
	if err := s.file.SetReadDeadline(time.Now().Add(left)); err != nil {
		s.file.Close()
		return nil
	}
	s.deadline, s.dl = true, gt.seq
	return s
}

// fakeDeadlineLeft is how long gt, a deadline set in a bubble, has left:
// on that bubble's clock, as the deadline, for a caller in the bubble;
// for any other caller, whose clock is another bubble's or the real one,
// what the real clock has left of the deadline's span (realDeadline), as
// the bubble's own clock cannot be read from there.
func fakeDeadlineLeft(gt *gateTimer) time.Duration {
	if bubble.In() && currentBubble() == gt.bubble {
		return time.Duration(gt.deadline - nanotime())
	}
	return time.Duration(gt.realDeadline - realclock.Nanotime())
}

// realClockCtxSlotLocked is realClockSlotLocked for a cancellable wait: a
// slot whose read deadline is the earlier of g's deadline and ctx's, each
// if set in a bubble, on its fake clock; nil if neither is, or the park is
// durable. A slot for ctx's deadline ends the park as a cancellation
// (ctxExpired), and WaitContext returns context.DeadlineExceeded, as ctx
// will once its bubble's clock gets there. Called with mu held, by
// waitCancelable.
func (d *Desc) realClockCtxSlotLocked(g *gate, ctx context.Context) *parkSlot {
	if g.durable {
		return nil
	}
	t, ok := ctx.Deadline()
	ctxFake := ok && bubble.IsFakeTime(t) // no monotonic reading: a bubble's clock, or made so
	gateFake := g.dl != nil && g.dl.fake && g.dl.deadline != 0
	switch {
	case !ctxFake && !gateFake, !bubble.In():
		return nil
	case !ctxFake:
		return d.realClockSlotLocked(g)
	}
	left := time.Until(t)
	if gateFake && fakeDeadlineLeft(g.dl) <= left {
		return d.realClockSlotLocked(g)
	}
	s, err := newParkSlot()
	if err != nil {
		return nil
	}
	if err := s.file.SetReadDeadline(time.Now().Add(left)); err != nil {
		s.file.Close()
		return nil
	}
	s.ctxDeadline = true
	return s
}

// realDeadlineLocked expires g's deadline when its real-clock slot's
// read deadline ended a park no waker claimed, unless the deadline has
// changed since the park began. Called with mu held.
func (d *Desc) realDeadlineLocked(g *gate, s *parkSlot) {
	if gt := g.dl; gt.seq == s.dl && gt.deadline != 0 {
		g.expired = true
		gt.deadline = 0 // its bubble timer, if it ever fires, is stale
		d.shard.stats.timerFires.Add(1)
	}
}

// madeOutsideBubble returns what make returns, made on a goroutine outside
// every bubble (bubble.GoOutside): a channel made so belongs to no bubble,
// and goroutines outside it, the drain loop's, may use it. The caller
// yields until it is made.
func madeOutsideBubble[T any](make func() T) T {
	var made atomic.Pointer[T]
	bubble.GoOutside(func() {
		v := make()
		made.Store(&v)
	})
	for made.Load() == nil {
		runtime.Gosched()
	}
	return *made.Load()
}
