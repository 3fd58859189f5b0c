//go:build linux

package pollfd

// Datagram sockets in a testing/synctest bubble: the rule of bubble.go for
// sockets that have no one peer.
//
// A UDP or unixgram socket opened in a bubble has no peer to pair with: any
// socket may send to it. It becomes durable once a send by a socket of its
// bubble reaches it (reached: the root package finds the destination among
// the bubble's datagram sockets by its address, and a connected socket's
// peer at connect), as a listener becomes the bubble's once a dial of the
// bubble reaches it. From then on its reads park durably, by the checks of
// durableLocked; its writes never do (a full send buffer drains with no
// goroutine of the bubble to say so), and parks as outside a bubble.
//
// Who wakes a durable reader. The sender, after its send (reached): the
// datagram is on the receive queue when sendto(2) returns on loopback
// (docs/DESIGN.md measures it), so the reader's retry finds it, and a
// ReadyList watching the socket hears of it before the send returns.
//
// An error the kernel queues on a connected socket — ICMP port unreachable
// for a send to a closed port, on loopback queued before sendto(2)
// returns — has no sender of the bubble to wake the reader either, and
// the drain loop's edge could come after the bubble idled. So the socket's
// own send, when it reached no socket of the bubble, looks (unreached):
// with an error or a datagram pending it wakes its durable reader, which
// finds it.
//
// A datagram from outside the bubble — net's socket, another process, a
// send through a number handed out — has no goroutine of the bubble to
// wake the reader. The drain loop's edge tells: an edge that finds a
// durable reader parked, no send of the bubble to it under way (inbound:
// the sender counts itself in before its system call and out after its
// wake) and the socket readable is such a datagram. The socket then stops
// being durable for good (outside) and the edge wakes the reader, as over
// net. A datagram that comes while the bubble is idle can come after the
// bubble's clock moved on, as a connection to a listener of the bubble can.

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/pollhook"
)

func init() {
	pollhook.Datagram = (*Desc).datagramInBubble
	pollhook.Sending = (*Desc).sending
	pollhook.Reached = (*Desc).reached
	pollhook.ReachedRaw = (*Desc).reachedRaw
	pollhook.Unreached = (*Desc).unreached
}

// dgram is what a datagram socket of a bubble keeps.
type dgram struct {
	inbound atomic.Int32 // sends of the bubble to it under way
	outside bool         // it received from outside the bubble, or was used there: never durable again (mu)
}

// datagramInBubble records d, a datagram socket opened in a bubble.
func (d *Desc) datagramInBubble() {
	d.mu.Lock()
	if durableParks && d.is(descBubble) {
		d.extLocked().dgram = &dgram{}
	}
	d.mu.Unlock()
}

// dgramLocked returns d's datagram record, or nil. Called with mu held.
func (d *Desc) dgramLocked() *dgram {
	if d.ext == nil {
		return nil
	}
	return d.ext.dgram
}

// sending counts a send of the bubble to d in (+1) or out (-1).
func (d *Desc) sending(delta int) {
	d.mu.Lock()
	dg := d.dgramLocked()
	d.mu.Unlock()
	if dg != nil {
		dg.inbound.Add(int32(delta))
	}
}

// reached is the sender's wake after a send of the bubble reached d: d
// becomes durable, if it may, and, with wake, its durable reader is woken
// and its ReadyList told, as a peer's write does (wakeDurable). A sender
// whose send reached a socket of its bubble calls it on itself without
// wake: its replies come from the bubble.
func (d *Desc) reached(wake bool) {
	d.mu.Lock()
	dg := d.dgramLocked()
	if dg == nil || dg.outside || d.is(descClosing) {
		d.mu.Unlock()
		return
	}
	if !d.is(descDurable) {
		if currentBubble() != d.bubbleOf() {
			d.mu.Unlock()
			return
		}
		d.setLocked(descDurable, true)
		d.repark() // a reader parked as outside a bubble parks again, durably
	}
	d.mu.Unlock()
	if wake && d.wakeDurable(ModeRead) {
		d.datagramOutside()
	}
}

// reachedRaw is reached for a send through a RawConn, whose destination
// gatenet does not see: it wakes d's reader only if d is durable already
// and of the sender's bubble, and makes nothing durable.
func (d *Desc) reachedRaw() {
	d.mu.Lock()
	dg := d.dgramLocked()
	mine := dg != nil && !dg.outside && !d.is(descClosing) && d.is(descDurable) && currentBubble() == d.bubbleOf()
	d.mu.Unlock()
	if mine {
		d.wakeDurable(ModeRead)
	}
}

// unreached is d's check after its own send, d a connected datagram socket
// of a bubble, reached no socket of the bubble (the top of this file).
func (d *Desc) unreached() {
	d.mu.Lock()
	parked := d.dgramLocked() != nil && d.rg.waiting && d.rg.durable
	d.mu.Unlock()
	if !parked {
		return // a read to come finds the error in durableLocked's poll(2)
	}
	if ready, err := readyNow(d.fd, unix.POLLIN); err == nil && ready && d.wakeDurable(ModeRead) {
		d.datagramOutside()
	}
}

// datagramOutside makes d, a datagram socket, an ordinary one for good.
func (d *Desc) datagramOutside() {
	d.mu.Lock()
	if dg := d.dgramLocked(); dg != nil {
		dg.outside = true
	}
	d.mu.Unlock()
	d.unpair()
}

// fromOutsideLocked reports whether a read edge that found g's reader
// parked durably was a datagram from outside the bubble (the top of this
// file); if so d is no longer durable, and the caller wakes the reader
// (wakeLocked: the park is still durable, on its durableSema).
// Called with mu held, by deliver.
func (d *Desc) fromOutsideLocked(g *gate) bool {
	dg := d.dgramLocked()
	if dg == nil || g != &d.rg || !g.waiting || !g.durable || dg.inbound.Load() != 0 {
		return false
	}
	if ready, err := readyNow(d.fd, unix.POLLIN); err != nil || !ready {
		return false // a late edge of the bubble's own datagram, already read
	}
	dg.outside = true
	d.setLocked(descDurable, false)
	d.memberNotDurable()
	return true
}
