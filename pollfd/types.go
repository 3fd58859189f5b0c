package pollfd

// The declarations every platform shares: on Linux they are the poller's,
// elsewhere stub_other.go stubs the behaviour around them.

import (
	"errors"
	"expvar"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Mode selects a direction, with the runtime's values.
type Mode int

const (
	ModeRead      Mode = 'r'
	ModeWrite     Mode = 'w'
	ModeReadWrite Mode = 'r' + 'w'
)

func (m Mode) String() string {
	switch m {
	case ModeRead:
		return "read"
	case ModeWrite:
		return "write"
	case ModeReadWrite:
		return "read+write"
	}
	return "invalid mode"
}

// Errors returned by Prepare and Wait. The fd layer (gatenet's
// internal/poll, errors.go) maps them to what the standard library
// returns: ErrClosing to net.ErrClosed (sockets) or os.ErrClosed (files),
// ErrTimeout to os.ErrDeadlineExceeded.
var (
	ErrClosing     = errors.New("pollfd: descriptor is closing")
	ErrTimeout     = errors.New("pollfd: deadline exceeded")
	ErrNotPollable = errors.New("not pollable") // last event was EPOLLERR alone
	ErrDoubleWait  = errors.New("pollfd: a second waiter on the same gate")
	ErrInvalidMode = errors.New("pollfd: invalid mode")
	ErrNotClosing  = errors.New("pollfd: Close without Unblock")
	ErrWaiters     = errors.New("pollfd: Close while a waiter is parked")
)

// Strategy selects how the drain loop waits for epoll.
type Strategy int

const (
	// Nested parks the epoll descriptor in the Go runtime's poller.
	Nested Strategy = iota
	// Dedicated blocks one locked OS thread in epoll_wait(-1).
	Dedicated
)

func (s Strategy) String() string {
	switch s {
	case Nested:
		return "nested"
	case Dedicated:
		return "dedicated"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Options configure a Poller.
type Options struct {
	Strategy Strategy
	// Harvest lets a waiter run epoll_wait(…, 0) itself before it parks.
	Harvest bool
	// Shards is how many epoll instances descriptors are spread over,
	// each with its own drain loop; 0 means 1, and at most 1024. A waiter
	// harvests only its own shard. DefaultOptions sets
	// ShardsFor(GOMAXPROCS).
	Shards int
	// RuntimePark lets a parking waiter wait in the Go runtime's poller,
	// on one of a few eventfds, so that its wake-up needs no thread wake
	// (slots.go).
	RuntimePark bool
}

// DefaultOptions returns what Default uses unless GATENET_POLLER or
// GATENET_SHARDS says otherwise: Nested with Harvest and RuntimePark
// (strategy.go says why; docs/PERFORMANCE.md has the measurements), on
// ShardsFor(runtime.GOMAXPROCS(0)) shards.
func DefaultOptions() Options {
	return Options{Strategy: Nested, Harvest: true, RuntimePark: true, Shards: ShardsFor(runtime.GOMAXPROCS(0))}
}

// procsPerShard is how many Ps one shard's drain loop serves in
// DefaultOptions (docs/DESIGN.md, "How delivery scales with the cores",
// has the measurements that chose it).
const procsPerShard = 4

// ShardsFor returns DefaultOptions' shard count for procs Ps (GOMAXPROCS):
// one shard per four Ps, rounded up, so 1 up to 4 Ps, 2 up to 8, 4 at 16
// and 16 at 64. A shard's drain loop is one goroutine through which all of
// the shard's readiness that its waiters do not harvest passes; with one
// per four Ps, delivery grows with the cores (place.go). It is at most
// 1024, the most a Poller takes (4,096 Ps and more).
func ShardsFor(procs int) int {
	return min(maxShards, max(1, procs/procsPerShard+min(1, procs%procsPerShard))) // (procs+3)/4 overflows for the largest ints
}

// String gives the form ParseOptions reads: "nested", "dedicated",
// "nested+harvest", "dedicated+harvest", any of them with "+rpark"
// (RuntimePark, as "nested+harvest+rpark"); more than one shard adds
// "/N-shards".
func (o Options) String() string {
	s := o.Strategy.String()
	if o.Harvest {
		s += "+harvest"
	}
	if o.RuntimePark {
		s += "+rpark"
	}
	if o.Shards > 1 {
		s += "/" + strconv.Itoa(o.Shards) + "-shards"
	}
	return s
}

func (o Options) validate() error {
	if o.Strategy != Nested && o.Strategy != Dedicated {
		return fmt.Errorf("pollfd: unknown strategy %v", o.Strategy)
	}
	if o.Shards < 0 {
		return fmt.Errorf("pollfd: negative shard count %d", o.Shards)
	}
	if o.Shards > maxShards {
		return fmt.Errorf("pollfd: shard count %d: %w", o.Shards, errTooMany)
	}
	return nil
}

// ParseOptions reads the String form of Options, its "/N-shards" too
// (Shards is 0, the default, without it). On error the Options are zero.
func ParseOptions(s string) (Options, error) {
	o, err := parseOptions(s)
	if err != nil {
		return Options{}, fmt.Errorf("pollfd: %w in %q (want nested or dedicated, optionally +harvest and +rpark, then /N-shards)", err, s)
	}
	return o, nil
}

// parseOptions is ParseOptions, with an error that says only what is wrong
// (GATENET_POLLER's error says the rest: env.go).
func parseOptions(s string) (Options, error) {
	var o Options
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '/'); i >= 0 {
		n, err := parseShards(s[i+1:])
		if err != nil {
			return o, err
		}
		o.Shards, s = n, s[:i]
	}
	parts := strings.Split(s, "+")
	switch parts[0] {
	case "nested":
		o.Strategy = Nested
	case "dedicated":
		o.Strategy = Dedicated
	default:
		return o, fmt.Errorf("unknown strategy %q", parts[0])
	}
	for _, extra := range parts[1:] {
		switch {
		case extra == "harvest" && !o.Harvest:
			o.Harvest = true
		case extra == "rpark" && !o.RuntimePark:
			o.RuntimePark = true
		default:
			return o, fmt.Errorf("unknown or repeated option %q", extra)
		}
	}
	return o, nil
}

// maxShards bounds a Poller's shards, GATENET_SHARDS and New's Options
// alike. Every shard is made at the poller's start (the default poller's
// first Open): an epoll descriptor, park-slot eventfds and a
// token table, about 4 descriptors and 42 KiB of heap a shard (1024
// shards: 4,096 descriptors, 42 MiB, 0.18 s to start, at GOMAXPROCS 2), so
// a count mistyped a few zeros too long (100000) would cost some 400,000
// descriptors, failing with EMFILE under most limits, before the first
// socket. 1024 allows one shard per P up to 1024 Ps, more than sharding
// is measured to pay off at (one per four Ps, ShardsFor; docs/DESIGN.md,
// "Why four Ps a shard"), and ShardsFor's own count up to 4096 Ps. Past
// it New would run out of memory, or descriptors, before it failed.
const maxShards = 1024

var (
	errNotPositive = errors.New("not positive")
	errTooMany     = errors.New("more than 1024 shards")
)

// parseShards reads the "N-shards" of a String form: N from 1 to
// maxShards, as GATENET_SHARDS takes.
func parseShards(s string) (int, error) {
	digits, ok := strings.CutSuffix(s, "-shards")
	n, err := strconv.Atoi(digits)
	switch {
	case !ok || err != nil:
		return 0, fmt.Errorf("bad shard count %q (want N-shards)", s)
	case n <= 0:
		return 0, fmt.Errorf("shard count %q: %w", s, errNotPositive)
	case n > maxShards:
		return 0, fmt.Errorf("shard count %q: %w", s, errTooMany)
	}
	return n, nil
}

// Stats is a snapshot of a poller's counters. They are atomic counters
// bumped on paths that already take a lock or make a system call, cheap
// enough to leave on.
type Stats struct {
	Registered  int64  // descriptors open on the poller now, in the epoll set or not yet (OpenLazy)
	EpollAdds   uint64 // EPOLL_CTL_ADDs: one per Open, one per OpenLazy descriptor ever waited on or watched
	DrainLoops  int64  // drain goroutines running now (only while descriptors are registered; drain.go)
	DrainStarts uint64 // drain goroutines started
	EpollWaits  uint64 // epoll_wait returns in the drain loop
	Events      uint64 // events delivered to a registered descriptor (counted before the wake-up each causes)
	StaleEvents uint64 // events whose token was no longer registered (dropped)
	Parks       uint64 // Waits that parked
	ParksInSlot uint64 // of which in a park slot, in the runtime's poller (Options.RuntimePark)
	EINTR       uint64 // epoll_wait calls interrupted by a signal, and retried
	TimerFires  uint64 // deadlines that expired by their timer
	Harvests    uint64 // waiter-side epoll_wait(0) calls that found events
	// HarvestsDeferred counts harvests not made because woken waiters
	// were still waiting to run (strategy.go, harvestNow).
	HarvestsDeferred uint64
	// Runnable is how many waiters a waker has woken that have not run
	// yet, now.
	Runnable int64

	// Parked waiters woken, in total and by cause.
	Wakeups         uint64
	WakeupsEvent    uint64 // readiness
	WakeupsDeadline uint64 // a deadline expired or was set in the past
	WakeupsClose    uint64 // Unblock (Close)
	WakeupsKick     uint64 // a wake-up the fault layer asked for (Desc.kick)
	Canceled        uint64 // waits abandoned because their context ended

	// Delivery by the drain loops (drain.go), the rest of Events and
	// WakeupsEvent being the waiters' harvests': the events they
	// delivered, the waiters those woke, and the time they spent
	// delivering, from each wake to their next wait (drainNow says how it
	// is measured). Read per shard (ShardStats) over an interval, DrainTime
	// over the interval's length is the share of one core a shard's one
	// drain goroutine needs, and DrainWakeups over all shards' Wakeups the
	// share of the process's wake-ups it delivers: where both grow with
	// the load, that goroutine is the serial point (docs/DESIGN.md, "How
	// delivery scales with the cores").
	DrainEvents  uint64
	DrainWakeups uint64
	DrainTime    time.Duration

	// EventsPerWait is a histogram of the events one drain-loop epoll_wait
	// returned: bucket 0 counts returns with no event, bucket i (i ≥ 1)
	// those with 2^(i-1) to 2^i-1 events.
	EventsPerWait [9]uint64
}

func (t *Stats) add(s Stats) {
	t.Registered += s.Registered
	t.EpollAdds += s.EpollAdds
	t.DrainLoops += s.DrainLoops
	t.DrainStarts += s.DrainStarts
	t.EpollWaits += s.EpollWaits
	t.Events += s.Events
	t.StaleEvents += s.StaleEvents
	t.Parks += s.Parks
	t.ParksInSlot += s.ParksInSlot
	t.EINTR += s.EINTR
	t.TimerFires += s.TimerFires
	t.Harvests += s.Harvests
	t.HarvestsDeferred += s.HarvestsDeferred
	t.Runnable += s.Runnable
	t.Wakeups += s.Wakeups
	t.WakeupsEvent += s.WakeupsEvent
	t.WakeupsDeadline += s.WakeupsDeadline
	t.WakeupsClose += s.WakeupsClose
	t.WakeupsKick += s.WakeupsKick
	t.Canceled += s.Canceled
	t.DrainEvents += s.DrainEvents
	t.DrainWakeups += s.DrainWakeups
	t.DrainTime += s.DrainTime
	for i := range t.EventsPerWait {
		t.EventsPerWait[i] += s.EventsPerWait[i]
	}
}

// PublishExpvar publishes the default poller's Stats as the expvar
// variable name (served by expvar's /debug/vars handler). Like
// expvar.Publish it panics if name is already taken: call it once.
func PublishExpvar(name string) {
	expvar.Publish(name, expvar.Func(func() any { return Default().Stats() }))
}
