//go:build linux

package poll

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/pollhook"
	"github.com/gatenet/gatenet/pollfd"
)

// Descriptors in testing/synctest bubbles (pollfd/bubble.go has the
// protocol). Two ends paired in a bubble have flagBubble: each I/O loop's
// system-call step then, after a call that succeeded, wakes the peer's
// durable waiter the call may have readied (hookStep), through the same
// out-of-line step the fault layer uses, so an FD outside a bubble pays
// the one load and branch it pays for faults. Close and Shutdown wake the
// peer after their system calls.

var (
	descInBubble  = pollhook.InBubble.(func(*pollfd.Desc) bool)
	pairDescs     = pollhook.Pair.(func(a, b *pollfd.Desc) bool)
	acceptDurably = pollhook.AcceptDurably.(func(*pollfd.Desc))
	descDurable   = pollhook.Durable.(func(*pollfd.Desc) bool)
	neverDurable  = pollhook.NeverDurable.(func(*pollfd.Desc))
	wakePeer      = pollhook.WakePeer.(func(*pollfd.Desc, pollfd.Mode))
	wakeDurable   = pollhook.WakeDurable.(func(*pollfd.Desc, pollfd.Mode))
	unpair        = pollhook.Unpair.(func(*pollfd.Desc))
	datagramDesc  = pollhook.Datagram.(func(*pollfd.Desc))
	sending       = pollhook.Sending.(func(*pollfd.Desc, int))
	reached       = pollhook.Reached.(func(*pollfd.Desc, bool))
	unreached     = pollhook.Unreached.(func(*pollfd.Desc))
	reachedRaw    = pollhook.ReachedRaw.(func(*pollfd.Desc))
)

// DatagramInBubble records fd, a datagram socket opened in a bubble: its
// reads park durably once a send of its bubble reaches it
// (pollfd/bubble_dgram.go).
func (fd *FD) DatagramInBubble() {
	if fd.pd != nil && !fd.faulted() {
		datagramDesc(fd.pd)
		fd.flags.Or(flagBubbleLocks)
	}
}

// SendingInBubble counts a send of fd's bubble to fd in (+1), before its
// system call, or out (-1), after Reached.
func (fd *FD) SendingInBubble(delta int) {
	if fd.pd != nil {
		sending(fd.pd, delta)
	}
}

// Reached wakes fd's durable reader after a send of its bubble reached it.
func (fd *FD) Reached() {
	if fd.pd != nil {
		reached(fd.pd, true)
	}
}

// SentInBubble records that fd sent to a datagram socket of its bubble:
// its replies come from the bubble, so its reads may park durably.
func (fd *FD) SentInBubble() {
	if fd.pd != nil {
		reached(fd.pd, false)
	}
}

// ReachedRaw wakes fd's durable reader, if it is of the calling
// goroutine's bubble, after a send through a RawConn that may have
// reached it.
func (fd *FD) ReachedRaw() {
	if fd.pd != nil {
		reachedRaw(fd.pd)
	}
}

// SentUnreached is fd's own check after a connected datagram socket of a
// bubble sent to a peer that is no socket of its bubble: an error the
// send drew (a closed port's ICMP) ends its durable read.
func (fd *FD) SentUnreached() {
	if fd.pd != nil {
		unreached(fd.pd)
	}
}

// HandedOut records that fd's number is leaving gatenet's hands (Dup, a
// RawConn, a File's Fd): bytes can now reach it, or its peer, by system
// calls gatenet does not see, so neither parks durably from now on; and
// its open file description may be shared, so its calls no longer keep
// the P (fd_sys.go).
func (fd *FD) HandedOut() {
	fd.flags.And(^uint32(flagPrivate))
	if fd.pd != nil && descInBubble(fd.pd) {
		unpair(fd.pd)
		fd.flags.And(^uint32(flagBubble))
	}
}

// InBubble reports whether fd was opened in a testing/synctest bubble.
func (fd *FD) InBubble() bool { return fd.pd != nil && descInBubble(fd.pd) }

// PairInBubble records that a and b are the two ends of one connection or
// pipe. If both were opened in a bubble, their waits may from now on park
// durably, and their I/O wakes each other; it reports whether they were
// paired. An FD with faults attached is never paired: the fault layer's
// delays run on the real clock.
func PairInBubble(a, b *FD) bool {
	if a.pd == nil || b.pd == nil || a.faulted() || b.faulted() || !pairDescs(a.pd, b.pd) {
		return false
	}
	a.flags.Or(flagBubble)
	b.flags.Or(flagBubble)
	return true
}

// lockDurably reports whether a wait for fd's read or write lock parks
// durably in a bubble (fdSema): on a paired descriptor, or on one whose
// waits pollfd now parks durably (the bubble's listener or datagram
// socket, flagBubbleLocks), whose locks only the bubble's goroutines
// hold, each of them parked durably itself or about to unlock.
func (fd *FD) lockDurably() bool {
	f := fd.flags.Load()
	return f&flagBubble != 0 || f&flagBubbleLocks != 0 && descDurable(fd.pd)
}

// AcceptInBubble marks fd, a listening socket opened in a bubble that a
// dial of its bubble has reached, as the bubble's: its accepts park
// durably from now on, woken by the bubble's dials (WakeListener).
func (fd *FD) AcceptInBubble() {
	if fd.pd != nil {
		acceptDurably(fd.pd)
		fd.flags.Or(flagBubbleLocks)
	}
}

// WakeListener wakes fd's durable accept: a dial of its bubble reached it.
func (fd *FD) WakeListener() {
	if fd.pd != nil {
		wakeDurable(fd.pd, pollfd.ModeRead)
	}
}

// wakePeer wakes the peer's durable waiter after a system call in mode.
func (fd *FD) wakePeer(mode pollfd.Mode) {
	if fd.flags.Load()&flagBubble != 0 {
		wakePeer(fd.pd, mode)
	}
}

// Shutdown wraps shutdown(2), as internal/poll's FD.Shutdown.
func (fd *FD) Shutdown(how int) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	err := unix.Shutdown(fd.Sysfd, how)
	if err == nil && fd.flags.Load()&flagBubble != 0 {
		wakePeer(fd.pd, pollfd.ModeReadWrite)
		// Its own waiters too: a Read parked here now reads EOF, a Write
		// fails with EPIPE, and a durable park hears no edge of that.
		own := pollfd.ModeReadWrite
		switch how {
		case unix.SHUT_RD:
			own = pollfd.ModeRead
		case unix.SHUT_WR:
			own = pollfd.ModeWrite
		}
		wakeDurable(fd.pd, own)
	}
	return os.NewSyscallError("shutdown", err)
}
