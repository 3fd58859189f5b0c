package faults

import (
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
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
	Wait  time.Duration // > 0: no call; report EAGAIN and Kick the waiter after Wait
	Park  bool          // no call; report EAGAIN: a Kick is due already, or only the deadline or Close ends this
	Again bool          // no call; report EAGAIN and Kick the waiter at once
	Err   syscall.Errno // no call; fail with Err
	EOF   bool          // no call; report the end of the stream
	Drop  bool          // datagram: write, no call, report success; read, make the call and lose what it got
	Shut  Shutdown      // with Err: first do this to the socket (a ResetAfter or CloseAfter of 0)
}

// Injector is the fault state of one descriptor: the bytes passed each
// way, the random generators, a pending delay. gatenet's descriptor layer
// (internal/poll) calls it around each system call; it is exported so that
// the contract is written down, not for use beside gatenet's.
type Injector struct {
	f        *Faults
	fd       int
	datagram bool

	mu         sync.Mutex
	dirs       [2]dirState
	misc       *rand.Rand // accept, dial, duplicate, reorder
	burst      int        // accept errors left in the current burst
	burstEnded bool       // the last accept ended a burst
	broken     bool       // reset: every later call fails with ECONNRESET
}

type dirState struct {
	passed    int64      // bytes passed (datagrams: datagrams)
	chunkLeft int        // slicer: bytes left in the current chunk
	chunks    *rand.Rand // slicer: chunk sizes only, so they replay
	coins     *rand.Rand // every other decision
	until     time.Time  // no system call before this
	kickAt    time.Time  // a Kick is scheduled for then
	paceAt    time.Time  // bandwidth: when the bytes passed are paid for
	stalled   bool       // the stall happened
	eof       bool       // read CloseAfter reached
	shut      bool       // write CloseAfter reached
}

// NewInjector returns f's state for one descriptor, fd (for the events),
// which carries datagrams or a stream. It fails if f is not valid.
func (f *Faults) NewInjector(fd int, datagram bool) (*Injector, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	in := &Injector{f: f, fd: fd, datagram: datagram}
	in.misc = rand.New(rand.NewPCG(f.Seed, 4))
	for i := range in.dirs {
		in.dirs[i].chunks = rand.New(rand.NewPCG(f.Seed, uint64(2*i)))
		in.dirs[i].coins = rand.New(rand.NewPCG(f.Seed, uint64(2*i+1)))
	}
	return in, nil
}

// Faults returns the Faults value in is drawn from.
func (in *Injector) Faults() *Faults { return in.f }

func (in *Injector) event(k kind, dir Dir, s *dirState, n int, err error) {
	in.f.record(k, Event{Dir: dir, Fd: in.fd, Offset: s.passed, N: n, Err: err})
}

// Before is called before each system call of a read (dir Read) or write
// (dir Write); first is true for the first of a Read or Write call.
func (in *Injector) Before(dir Dir, first bool) Step {
	i := dir.index()
	p := &in.f.plan.dirs[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	s := &in.dirs[i]
	if in.broken {
		return Step{Err: syscall.ECONNRESET}
	}
	if s.eof {
		return Step{EOF: true}
	}
	if s.shut {
		return Step{Err: syscall.EPIPE}
	}
	now := time.Now()
	if first && p.latency != nil {
		d := p.latency.Delay
		if p.latency.Jitter > 0 {
			d += time.Duration(s.coins.Int64N(int64(p.latency.Jitter)))
		}
		if t := now.Add(d); t.After(s.until) {
			s.until = t
		}
		in.event(kindLatency, dir, s, int(d/time.Microsecond), nil)
	}
	if now.Before(s.until) {
		return in.waitUntil(s, now)
	}
	var st Step
	limit := func(n int64) {
		if n > 0 && (st.Limit == 0 || n < int64(st.Limit)) {
			st.Limit = int(min(n, 1<<30))
		}
	}
	if !in.datagram {
		if p.reset >= 0 && s.passed >= p.reset {
			in.broken = true
			in.event(kindReset, dir, s, 0, syscall.ECONNRESET)
			return Step{Shut: ShutReset, Err: syscall.ECONNRESET}
		}
		if p.close >= 0 && s.passed >= p.close {
			in.event(kindClose, dir, s, 0, nil)
			if dir == Read {
				s.eof = true
				return Step{EOF: true}
			}
			s.shut = true
			return Step{Shut: ShutWrite, Err: syscall.EPIPE}
		}
		if p.stall != nil && !s.stalled {
			if s.passed >= p.stall.After {
				s.stalled = true
				in.event(kindStall, dir, s, int(p.stall.For/time.Microsecond), nil)
				if p.stall.For == 0 {
					return Step{Park: true}
				}
				s.until = now.Add(p.stall.For)
				return in.waitUntil(s, now)
			}
			limit(p.stall.After - s.passed)
		}
		if p.stall != nil && s.stalled && p.stall.For == 0 {
			return Step{Park: true}
		}
		if p.reset >= 0 {
			limit(p.reset - s.passed)
		}
		if p.close >= 0 {
			limit(p.close - s.passed)
		}
		if b := p.bandwidth; b > 0 {
			if now.Before(s.paceAt) {
				s.until = s.paceAt
				in.event(kindBandwidth, dir, s, int(s.paceAt.Sub(now)/time.Microsecond), nil)
				return in.waitUntil(s, now)
			}
			limit(int64(max(b/100, 1)))
		}
		if sl := p.slicer; sl != nil {
			if s.chunkLeft == 0 {
				s.chunkLeft = sl.Min + s.chunks.IntN(sl.Max-sl.Min+1)
				in.event(kindSlice, dir, s, s.chunkLeft, nil)
				if sl.Delay > 0 && s.passed > 0 {
					s.until = now.Add(sl.Delay)
					in.event(kindPause, dir, s, int(sl.Delay/time.Microsecond), nil)
					return in.waitUntil(s, now)
				}
			}
			limit(int64(s.chunkLeft))
		}
	}
	if p.eagain > 0 && s.coins.Float64() < p.eagain {
		in.event(kindEAGAIN, dir, s, 0, nil)
		return Step{Again: true}
	}
	if in.datagram && p.drop > 0 && s.coins.Float64() < p.drop {
		in.event(kindDrop, dir, s, 0, nil)
		st.Drop = true
	}
	return st
}

// waitUntil is the Step that waits for s.until, scheduling a Kick unless
// one is due by then.
func (in *Injector) waitUntil(s *dirState, now time.Time) Step {
	if !s.kickAt.IsZero() && !s.kickAt.After(s.until) && s.kickAt.After(now) {
		return Step{Park: true}
	}
	s.kickAt = s.until
	return Step{Wait: s.until.Sub(now)}
}

// Passed records n bytes (a datagram: 1) passed by a system call in dir
// and returns what the descriptor must do now to its socket: a stream that
// reached a ResetAfter or CloseAfter ends there.
func (in *Injector) Passed(dir Dir, n int) Shutdown {
	i := dir.index()
	p := &in.f.plan.dirs[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	s := &in.dirs[i]
	if in.datagram {
		s.passed++
		return ShutNone
	}
	s.passed += int64(n)
	if s.chunkLeft > 0 {
		s.chunkLeft = max(s.chunkLeft-n, 0)
	}
	if b := p.bandwidth; b > 0 {
		now := time.Now()
		if s.paceAt.Before(now) {
			s.paceAt = now
		}
		s.paceAt = s.paceAt.Add(time.Duration(int64(n) * int64(time.Second) / int64(b)))
	}
	switch {
	case p.reset >= 0 && s.passed >= p.reset && !in.broken:
		in.broken = true
		in.event(kindReset, dir, s, 0, syscall.ECONNRESET)
		return ShutReset
	case p.close >= 0 && s.passed >= p.close && !s.eof && !s.shut:
		in.event(kindClose, dir, s, 0, nil)
		if dir == Read {
			s.eof = true
			return ShutNone
		}
		s.shut = true
		return ShutWrite
	}
	return ShutNone
}

// AfterEAGAIN is called when a system call in dir found nothing: with
// Wakeups' probability it returns the delay after which to wake the
// waiter for nothing.
func (in *Injector) AfterEAGAIN(dir Dir) (time.Duration, bool) {
	i := dir.index()
	p := &in.f.plan.dirs[i]
	if p.wakeup == 0 {
		return 0, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	s := &in.dirs[i]
	if s.coins.Float64() >= p.wakeup {
		return 0, false
	}
	in.event(kindWakeup, dir, s, 0, nil)
	return time.Duration(s.coins.Int64N(int64(time.Millisecond))), true
}

// Accept is called before each accept(2): a non-zero errno is the error
// to report instead. A nil Injector injects nothing.
func (in *Injector) Accept() syscall.Errno {
	if in == nil || in.f.plan.accept == nil {
		return 0
	}
	a := in.f.plan.accept
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.burst == 0 {
		// A burst never follows a burst: at least one accept(2) is made
		// between two, so that even P = 1 lets connections through.
		if in.burstEnded || in.misc.Float64() >= a.P {
			in.burstEnded = false
			return 0
		}
		in.burst = a.Burst
	}
	in.burst--
	in.burstEnded = in.burst == 0
	in.f.record(kindAccept, Event{Fd: in.fd, Err: a.Err})
	return a.Err
}

// Dial is called before connect(2): a non-zero errno is the error to
// report instead; hang, that the connect must wait for the dial's
// deadline or cancellation without being made. A nil Injector injects
// nothing.
func (in *Injector) Dial() (err syscall.Errno, hang bool) {
	if in == nil {
		return 0, false
	}
	d := in.f.plan.dial
	if d == nil {
		return 0, false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.misc.Float64() >= d.P {
		return 0, false
	}
	in.f.record(kindDial, Event{Fd: in.fd, Err: d.Err})
	return d.Err, d.Err == 0
}

// Datagram is called before a datagram is written (after Before allowed
// it): dup, send it twice; delay > 0, send a copy that much later instead.
func (in *Injector) Datagram() (dup bool, delay time.Duration) {
	p := &in.f.plan
	if p.dup == 0 && p.reorder == nil {
		return false, 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	s := &in.dirs[Write.index()]
	if p.reorder != nil && in.misc.Float64() < p.reorder.P {
		in.event(kindReorder, Write, s, 0, nil)
		return false, p.reorder.Delay
	}
	if p.dup > 0 && in.misc.Float64() < p.dup {
		in.event(kindDuplicate, Write, s, 0, nil)
		return true, 0
	}
	return false, 0
}
