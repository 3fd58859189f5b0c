package faults

import (
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/gatenet/gatenet/internal/faultinject"
)

// Shorter names for the contract's types (internal/faultinject).
type (
	step     = faultinject.Step
	shutdown = faultinject.Shutdown
)

func init() {
	faultinject.New = func(f any, fd int, t faultinject.Traffic) (faultinject.Injector, error) {
		in, err := f.(*Faults).newInjector(fd, t)
		if err != nil {
			return nil, err // not a nil *injector in an interface
		}
		return in, nil
	}
}

// injector is the fault state of one descriptor (faultinject.Injector):
// the bytes passed each way, the random generators, a pending delay.
// gatenet's descriptor layer (internal/poll) calls it around each system
// call.
type injector struct {
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
	latent    bool       // a Latency delay began that no system call has passed yet
	kickAt    time.Time  // a Kick is scheduled for then
	paceAt    time.Time  // bandwidth: when the bytes passed are paid for
	stalled   bool       // the stall happened
	eof       bool       // read CloseAfter reached
	shut      bool       // write CloseAfter reached
}

// newInjector returns f's state for one descriptor, fd (for the events),
// carrying t. It fails if f is not valid.
func (f *Faults) newInjector(fd int, t faultinject.Traffic) (*injector, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	in := &injector{f: f, fd: fd, datagram: t == faultinject.Datagrams}
	in.misc = rand.New(rand.NewPCG(f.Seed, 4))
	for i := range in.dirs {
		in.dirs[i].chunks = rand.New(rand.NewPCG(f.Seed, uint64(2*i)))
		in.dirs[i].coins = rand.New(rand.NewPCG(f.Seed, uint64(2*i+1)))
	}
	return in, nil
}

func (in *injector) event(k kind, dir Dir, s *dirState, n int, err error) {
	in.f.record(k, Event{Dir: dir, Fd: in.fd, Offset: s.passed, N: n, Err: err})
}

// Begin is called before the first system call of a read or write call
// in d: Latency holds the call back by its delay, then as Before. A call
// that gave up on the delay (its deadline, or a context already done: a
// ReadyQueue worker's read that never parks) leaves it running, and the
// next call waits for what is left of it rather than for a new one, or a
// caller that never waits would never pass.
func (in *injector) Begin(d faultinject.Dir) step {
	dir := Dir(d)
	i := dir.index()
	in.mu.Lock()
	defer in.mu.Unlock()
	if l := in.f.plan.dirs[i].latency; l != nil && !in.broken && !in.dirs[i].eof && !in.dirs[i].shut && !in.dirs[i].latent {
		s := &in.dirs[i]
		delay := l.Delay
		if l.Jitter > 0 {
			delay += time.Duration(s.coins.Int64N(int64(l.Jitter)))
		}
		if t := faultinject.Now().Add(delay); t.After(s.until) {
			s.until = t
		}
		s.latent = true
		in.event(kindLatency, dir, s, int(delay/time.Microsecond), nil)
	}
	return in.before(dir)
}

// Before is called before each later system call of a read or write call
// in d.
func (in *injector) Before(d faultinject.Dir) step {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.before(Dir(d))
}

// before is Before, in.mu held.
func (in *injector) before(dir Dir) step {
	i := dir.index()
	p := &in.f.plan.dirs[i]
	s := &in.dirs[i]
	if in.broken {
		return step{Err: syscall.ECONNRESET}
	}
	if s.eof {
		return step{EOF: true}
	}
	if s.shut {
		return step{Err: syscall.EPIPE}
	}
	now := faultinject.Now()
	if now.Before(s.until) {
		return in.waitUntil(s, now)
	}
	s.latent = false // the delay is over: the next call's Begin starts its own
	var st step
	limit := func(n int64) {
		if n > 0 && (st.Limit == 0 || n < int64(st.Limit)) {
			st.Limit = int(min(n, 1<<30))
		}
	}
	if !in.datagram {
		if p.reset >= 0 && s.passed >= p.reset {
			in.broken = true
			in.event(kindReset, dir, s, 0, syscall.ECONNRESET)
			return step{Shut: faultinject.ShutReset, Err: syscall.ECONNRESET}
		}
		if p.close >= 0 && s.passed >= p.close {
			in.event(kindClose, dir, s, 0, nil)
			if dir == Read {
				s.eof = true
				return step{EOF: true}
			}
			s.shut = true
			return step{Shut: faultinject.ShutWrite, Err: syscall.EPIPE}
		}
		if p.stall != nil && !s.stalled {
			if s.passed >= p.stall.After {
				s.stalled = true
				in.event(kindStall, dir, s, int(p.stall.For/time.Microsecond), nil)
				if p.stall.For == 0 {
					return step{Park: true}
				}
				s.until = now.Add(p.stall.For)
				return in.waitUntil(s, now)
			}
			limit(p.stall.After - s.passed)
		}
		if p.stall != nil && s.stalled && p.stall.For == 0 {
			return step{Park: true}
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
		return step{Again: true}
	}
	if in.datagram && p.drop > 0 && s.coins.Float64() < p.drop {
		in.event(kindDrop, dir, s, 0, nil)
		st.Drop = true
	}
	return st
}

// waitUntil is the Step that waits for s.until, scheduling a Kick unless
// one is due by then.
func (in *injector) waitUntil(s *dirState, now time.Time) step {
	if !s.kickAt.IsZero() && !s.kickAt.After(s.until) && s.kickAt.After(now) {
		return step{Park: true}
	}
	s.kickAt = s.until
	return step{Wait: s.until.Sub(now)}
}

// Passed records n bytes (a datagram: 1) passed by a system call in d
// and returns what the descriptor must do now to its socket: a stream that
// reached a ResetAfter or CloseAfter ends there.
func (in *injector) Passed(d faultinject.Dir, n int) shutdown {
	dir := Dir(d)
	i := dir.index()
	p := &in.f.plan.dirs[i]
	in.mu.Lock()
	defer in.mu.Unlock()
	s := &in.dirs[i]
	if in.datagram {
		s.passed++
		return faultinject.ShutNone
	}
	s.passed += int64(n)
	if s.chunkLeft > 0 {
		s.chunkLeft = max(s.chunkLeft-n, 0)
	}
	if b := p.bandwidth; b > 0 {
		now := faultinject.Now()
		if s.paceAt.Before(now) {
			s.paceAt = now
		}
		s.paceAt = s.paceAt.Add(time.Duration(int64(n) * int64(time.Second) / int64(b)))
	}
	switch {
	case p.reset >= 0 && s.passed >= p.reset && !in.broken:
		in.broken = true
		in.event(kindReset, dir, s, 0, syscall.ECONNRESET)
		return faultinject.ShutReset
	case p.close >= 0 && s.passed >= p.close && !s.eof && !s.shut:
		in.event(kindClose, dir, s, 0, nil)
		if dir == Read {
			s.eof = true
			return faultinject.ShutNone
		}
		s.shut = true
		return faultinject.ShutWrite
	}
	return faultinject.ShutNone
}

// AfterEAGAIN is called when a system call in d found nothing: with
// Wakeups' probability it returns the delay after which to wake the
// waiter for nothing.
func (in *injector) AfterEAGAIN(d faultinject.Dir) (time.Duration, bool) {
	dir := Dir(d)
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
// to report instead. A nil injector injects nothing.
func (in *injector) Accept() syscall.Errno {
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
// deadline or cancellation without being made. A nil injector injects
// nothing.
func (in *injector) Dial() (err syscall.Errno, hang bool) {
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
func (in *injector) Datagram() (dup bool, delay time.Duration) {
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
