// Package faultinject is the contract between package faults, which
// decides what goes wrong, and gatenet's descriptor layer
// (internal/poll), which asks it around each system call: an Injector per
// descriptor, the Step it answers before a call and the Shutdown a fault
// does to a socket. It is internal so that the contract can change with
// its two sides; faults' public API is the Faults value.
package faultinject

import (
	"syscall"
	"time"

	"github.com/gatenet/gatenet/internal/realclock"
)

// Dir is a direction, as package faults numbers it: what the descriptor
// reads or what it writes.
type Dir uint8

const (
	Read  Dir = 1 << iota // what the descriptor reads
	Write                 // what it writes
)

// Traffic is what a descriptor carries, which decides the faults that
// apply (a stream is sliced and reset; datagrams are dropped, duplicated
// and reordered).
type Traffic uint8

const (
	Stream Traffic = iota
	Datagrams
)

// Shutdown is what the descriptor does to its socket for a fault.
type Shutdown uint8

const (
	ShutNone  Shutdown = iota
	ShutWrite          // shutdown(SHUT_WR): a FIN
	ShutReset          // TCP: connect(AF_UNSPEC), a RST; others: shutdown(SHUT_RDWR)
)

// Step is the fault layer's answer to a descriptor about to make a system
// call: make it (within Limit), or not, and what to report instead.
type Step struct {
	Limit int           // > 0: pass at most Limit bytes in this call
	Wait  time.Duration // > 0: no call; report EAGAIN and kick the waiter after Wait
	Park  bool          // no call; report EAGAIN: a kick is due already, or only the deadline or Close ends this
	Again bool          // no call; report EAGAIN and kick the waiter at once
	Err   syscall.Errno // no call; fail with Err
	EOF   bool          // no call; report the end of the stream
	Drop  bool          // datagram: write, no call, report success; read, make the call and lose what it got
	Shut  Shutdown      // with Err: first do this to the socket (a ResetAfter or CloseAfter of 0)
}

// Injector is the fault state of one descriptor. Its methods are safe for
// concurrent use: a descriptor's reader and writer call it at once.
type Injector interface {
	// Begin is called before the first system call of a read (Read) or
	// write (Write) call: Latency holds the call back there.
	Begin(Dir) Step
	// Before is called before each later system call of the same call.
	Before(Dir) Step
	// Passed records n bytes (a datagram: one datagram) passed by a
	// system call and returns what to do now to the socket: a stream
	// that reached a ResetAfter or CloseAfter ends there.
	Passed(d Dir, n int) Shutdown
	// AfterEAGAIN is called when a system call found nothing: ok, to
	// kick the waiter after delay for nothing.
	AfterEAGAIN(Dir) (delay time.Duration, ok bool)
	// Accept is called before each accept(2): a non-zero errno is the
	// error to report instead.
	Accept() syscall.Errno
	// Dial is called before connect(2): a non-zero errno is the error to
	// report instead; hang, that the connect must wait for the dial's
	// end without being made.
	Dial() (err syscall.Errno, hang bool)
	// Datagram is called before a datagram is written (after Before
	// allowed it): dup, send it twice; delay > 0, send a copy that much
	// later instead.
	Datagram() (dup bool, delay time.Duration)
}

// New returns the Injector of f, a *faults.Faults, for the descriptor fd
// carrying t; it fails if f is not valid. Package faults sets it in its
// init: faults imports this package, so this one cannot name its type
// (as grpc's internal package does for its hooks).
var New func(f any, fd int, t Traffic) (Injector, error)

// Now is the injectors' clock: the machine's monotonic clock, not
// time.Now, which in a testing/synctest bubble is the bubble's fake clock.
// That clock never moves while a faulted wait lasts, since such waits are
// never durable, so a delay measured on it would never end.
func Now() time.Time { return realclock.Now() }
