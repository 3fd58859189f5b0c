// Package faults injects adverse I/O into gatenet's conns, listeners and
// pipes: short reads and writes that split a record, latency, a slow link,
// a peer that stalls, resets or closes after N bytes, spurious EAGAIN and
// wake-ups, accept errors, failing or hanging dials, and lost, duplicated
// or reordered datagrams.
//
// The faults act at the system-call boundary of each descriptor, inside
// gatenet's prepare → syscall → EAGAIN → wait loop, so the conn keeps its
// real type (CloseWrite, SyscallConn, deadlines as net gives them), a delay
// ends at the deadline or at Close as a real wait does, and the same
// faults work for TCP, Unix sockets, UDP and pipes, in the process, with
// no proxy to run.
//
// A Faults value is a seed and a list of faults:
//
//	f := faults.New(42,
//		faults.Slicer{Min: 1, Max: 7},                 // reads and writes in 1–7 byte chunks
//		faults.Latency{Delay: 5 * time.Millisecond, Dir: faults.Write},
//	)
//	d := gatenet.Dialer{Faults: f}                   // or ListenConfig.Faults, gatenet.InjectFaults(conn, f)
//	…
//	t.Logf("faults: %v, injected: %+v", f, f.Stats()) // the seed replays it
//
// or, for every gatenet descriptor of a process, from the environment:
//
//	GATENET_FAULTS='slicer=1-7;seed=42' go test ./...
//
// Every binary built with gatenet reads GATENET_FAULTS (EnvVar), once,
// production ones too, not only tests: keep it out of a service's
// environment. A valid value injects its faults into every gatenet
// descriptor the process makes (conns, listeners, pipes, Files); an
// invalid one makes every gatenet constructor (Listen, Dial, Pipe,
// OpenFile, FileConn, …; NewFile's operations) fail with an error naming
// the variable, its value and the valid syntax.
//
// Each descriptor a Faults value is attached to draws from its own
// generators, seeded from the Faults' seed and the direction alone: the
// same seed gives every conn the same chunk boundaries, in the same byte
// positions, run after run (what the scheduler decides, such as how many
// bytes one read finds, stays the scheduler's). Every injected fault is
// counted (Stats) and, if Log is set, reported as an Event.
//
// A descriptor without faults pays one flag test per call.
package faults

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Dir is the direction a fault applies to, seen from the end it is
// attached to: what this end reads, what it writes, or both.
type Dir uint8

const (
	Read  Dir = 1 << iota // what this end reads
	Write                 // what this end writes
	Both  = Read | Write
)

func (d Dir) String() string {
	switch d {
	case Read:
		return "read"
	case Write:
		return "write"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Dir(%d)", uint8(d))
}

// A Fault is one kind of adversity: one of the types of this package.
type Fault interface {
	fault() kind
}

// Slicer cuts every read and write into chunks of Min to Max bytes
// (uniformly drawn), pausing Delay between chunks if Delay is set. On a
// stream a write still writes all it was given, in several system calls;
// a read returns at most one chunk. Datagrams are not sliced. Dir zero is
// Both.
type Slicer struct {
	Min, Max int
	Delay    time.Duration
	Dir      Dir
}

// Latency holds each Write (Dir Write, the default) or each Read back by
// Delay plus a uniformly drawn part of Jitter before its first system
// call. Nothing written is delivered earlier than Delay after the call. A
// call that gives up while held (its deadline, or a context already done,
// as a ReadyQueue worker's read) leaves the delay running: the next call
// waits for the rest of it, not for a new one.
type Latency struct {
	Delay, Jitter time.Duration
	Dir           Dir
}

// Bandwidth paces the stream at BytesPerSecond in Dir (zero: Both): a
// transfer of N bytes takes at least N/BytesPerSecond, less the first
// chunk of at most a hundredth of a second's worth.
type Bandwidth struct {
	BytesPerSecond int
	Dir            Dir
}

// Stall stops the stream after After bytes in Dir (zero: Read) for For,
// or, with For zero, until the deadline or Close: a call in progress waits
// as if the peer had gone quiet.
type Stall struct {
	After int64
	For   time.Duration
	Dir   Dir
}

// ResetAfter resets the connection once N bytes have passed in Dir (zero:
// Write). TCP: a RST (the socket is disconnected, as by a linger-0 close,
// but the descriptor stays open); the peer's Read fails with ECONNRESET
// once the N bytes, or what of them it had not read, are gone. Other
// streams: both directions are shut down. This end's later reads and
// writes fail with ECONNRESET.
type ResetAfter struct {
	N   int64
	Dir Dir
}

// CloseAfter ends the stream once N bytes have passed in Dir (zero:
// Write). Write: a FIN (shutdown(SHUT_WR)) after exactly N bytes: the
// peer reads N bytes, then io.EOF; this end's later writes fail with
// EPIPE. Read: this end's reads return io.EOF after exactly N bytes.
type CloseAfter struct {
	N   int64
	Dir Dir
}

// EAGAIN answers a system call, with probability P, with EAGAIN it did
// not make, and wakes the waiter at once: the retry loop runs one more
// time. Dir zero is Both.
type EAGAIN struct {
	P   float64
	Dir Dir
}

// Wakeups, with probability P after a real EAGAIN, wakes the waiter
// within a millisecond with nothing to read or write: it retries, finds
// EAGAIN again and parks again. Dir zero is Both.
type Wakeups struct {
	P   float64
	Dir Dir
}

// AcceptErrors makes Accept fail with Err (EMFILE, ENFILE, ENOBUFS,
// ECONNABORTED, …) in bursts of Burst (zero: 1) calls, a burst starting
// with probability P at each Accept. ECONNABORTED is retried inside
// Accept, as net does, so it exercises that loop rather than the caller.
// Err is at most 4095, the kernel's last errno.
type AcceptErrors struct {
	Err   syscall.Errno
	P     float64
	Burst int
}

// DialErrors makes a dial's connect fail with Err (ECONNREFUSED,
// ENETUNREACH, EHOSTUNREACH, …) with probability P (zero: 1). Err zero
// makes the connect hang until the dial's deadline or cancellation; Err is
// at most 4095, the kernel's last errno.
type DialErrors struct {
	Err syscall.Errno
	P   float64
}

// Drop loses datagrams with probability P: a write reports success and
// sends nothing; a read receives one and goes on to the next. Dir zero is
// Both.
type Drop struct {
	P   float64
	Dir Dir
}

// Duplicate sends a written datagram twice with probability P.
type Duplicate struct {
	P float64
}

// Reorder holds a written datagram back with probability P and sends it
// Delay (zero: a millisecond) later, so datagrams written after it arrive
// first.
type Reorder struct {
	P     float64
	Delay time.Duration
}

func (Slicer) fault() kind       { return kindSlice }
func (Latency) fault() kind      { return kindLatency }
func (Bandwidth) fault() kind    { return kindBandwidth }
func (Stall) fault() kind        { return kindStall }
func (ResetAfter) fault() kind   { return kindReset }
func (CloseAfter) fault() kind   { return kindClose }
func (EAGAIN) fault() kind       { return kindEAGAIN }
func (Wakeups) fault() kind      { return kindWakeup }
func (AcceptErrors) fault() kind { return kindAccept }
func (DialErrors) fault() kind   { return kindDial }
func (Drop) fault() kind         { return kindDrop }
func (Duplicate) fault() kind    { return kindDuplicate }
func (Reorder) fault() kind      { return kindReorder }

// kind numbers the faults, for the counters and the events.
type kind int

const (
	kindSlice kind = iota
	kindLatency
	kindBandwidth
	kindStall
	kindReset
	kindClose
	kindEAGAIN
	kindWakeup
	kindAccept
	kindDial
	kindDrop
	kindDuplicate
	kindReorder
	kindPause // a slicer's pause between chunks
	numKinds
)

var kindNames = [numKinds]string{"slice", "latency", "bandwidth", "stall", "reset", "close", "eagain", "wakeup", "accept", "dial", "drop", "duplicate", "reorder", "pause"}

func (k kind) String() string { return kindNames[k] }

// Event is one injected fault, as Log receives it.
type Event struct {
	Kind   string // "slice", "latency", "bandwidth", "stall", "reset", "close", "eagain", "wakeup", "accept", "dial", "drop", "duplicate", "reorder" or "pause"
	Dir    Dir    // the direction; zero for accept and dial
	Fd     int    // the descriptor
	Offset int64  // bytes (datagrams: datagrams) that had passed in Dir before it
	N      int    // slice: the chunk's size; bandwidth, latency, stall: the delay in µs
	Err    error  // accept, dial, reset: the error injected
}

// Stats counts the faults injected, over every descriptor the Faults value
// is attached to.
type Stats struct {
	Chunks     int64 // chunks the slicer drew
	Delays     int64 // latency, bandwidth and slicer pauses
	Stalls     int64
	Resets     int64
	Closes     int64
	EAGAINs    int64
	Wakeups    int64
	Accepts    int64 // accept errors
	Dials      int64 // dial errors and hangs
	Dropped    int64
	Duplicated int64
	Reordered  int64
}

// Faults is a seed and the faults to inject; see the package comment. Set
// its fields before attaching it anywhere and leave them alone after: it
// is then safe for concurrent use by every descriptor it is attached to.
// A nil *Faults injects nothing.
type Faults struct {
	Seed   uint64
	Faults []Fault

	// Log, if set, is called for every injected fault, on the goroutine
	// doing the I/O (or a timer's); it must not block.
	Log func(Event)

	once   sync.Once
	plan   plan
	err    error
	counts [numKinds]atomic.Int64
}

// New returns a Faults value injecting fs with seed.
func New(seed uint64, fs ...Fault) *Faults {
	return &Faults{Seed: seed, Faults: fs}
}

// Validate reports the first fault whose settings make no sense (a
// negative size, a probability outside [0, 1], Min > Max, …). Attaching an
// invalid Faults value fails with this error.
func (f *Faults) Validate() error {
	if f == nil {
		return nil
	}
	f.once.Do(func() { f.plan, f.err = compile(f.Faults) })
	return f.err
}

// Stats returns the counts of the faults injected so far.
func (f *Faults) Stats() Stats {
	if f == nil {
		return Stats{}
	}
	c := func(k kind) int64 { return f.counts[k].Load() }
	return Stats{
		Chunks:     c(kindSlice),
		Delays:     c(kindLatency) + c(kindBandwidth) + c(kindPause),
		Stalls:     c(kindStall),
		Resets:     c(kindReset),
		Closes:     c(kindClose),
		EAGAINs:    c(kindEAGAIN),
		Wakeups:    c(kindWakeup),
		Accepts:    c(kindAccept),
		Dials:      c(kindDial),
		Dropped:    c(kindDrop),
		Duplicated: c(kindDuplicate),
		Reordered:  c(kindReorder),
	}
}

// String is f in GATENET_FAULTS's syntax (Parse reads it back), seed
// first: what a failing test prints to be replayed.
func (f *Faults) String() string {
	if f == nil {
		return "<nil>"
	}
	parts := []string{fmt.Sprintf("seed=%d", f.Seed)}
	for _, x := range f.Faults {
		parts = append(parts, format(x))
	}
	return strings.Join(parts, ";")
}

// record counts one injected fault of k and logs it.
func (f *Faults) record(k kind, ev Event) {
	f.counts[k].Add(1)
	if f.Log != nil {
		ev.Kind = k.String()
		f.Log(ev)
	}
}
