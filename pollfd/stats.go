//go:build linux

package pollfd

import (
	"expvar"
	"math/bits"
	"sync/atomic"
)

// Stats is a snapshot of a poller's counters. They are atomic counters
// bumped on paths that already take a lock or make a system call, cheap
// enough to leave on.
type Stats struct {
	Registered  int64  // descriptors registered now
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
	Canceled        uint64 // waits abandoned because their context ended

	// EventsPerWait is a histogram of the events one drain-loop epoll_wait
	// returned: bucket 0 counts returns with no event, bucket i (i ≥ 1)
	// those with 2^(i-1) to 2^i-1 events.
	EventsPerWait [9]uint64
}

type counters struct {
	registered       atomic.Int64
	drainLoops       atomic.Int64
	drainStarts      atomic.Uint64
	epollWaits       atomic.Uint64
	events           atomic.Uint64
	staleEvents      atomic.Uint64
	parks            atomic.Uint64
	parksInSlot      atomic.Uint64
	eintr            atomic.Uint64
	timerFires       atomic.Uint64
	harvests         atomic.Uint64
	harvestsDeferred atomic.Uint64
	wakeupsEvent     atomic.Uint64
	wakeupsDeadline  atomic.Uint64
	wakeupsClose     atomic.Uint64
	canceled         atomic.Uint64
	perWait          [9]atomic.Uint64
}

// recordWait counts one drain-loop epoll_wait that returned n events.
func (c *counters) recordWait(n int) {
	c.epollWaits.Add(1)
	b := bits.Len(uint(n)) // 0 → 0, 1 → 1, 2..3 → 2, …, 128 → 8
	if b >= len(c.perWait) {
		b = len(c.perWait) - 1
	}
	c.perWait[b].Add(1)
}

// Stats returns the poller's counters, summed over its shards.
func (p *Poller) Stats() Stats {
	var t Stats
	for _, s := range p.shards {
		t.add(s.snapshot())
	}
	return t
}

// ShardStats returns each shard's counters.
func (p *Poller) ShardStats() []Stats {
	out := make([]Stats, len(p.shards))
	for i, s := range p.shards {
		out[i] = s.snapshot()
	}
	return out
}

func (t *Stats) add(s Stats) {
	t.Registered += s.Registered
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
	t.Canceled += s.Canceled
	for i := range t.EventsPerWait {
		t.EventsPerWait[i] += s.EventsPerWait[i]
	}
}

func (s *shard) snapshot() Stats {
	c := &s.stats
	st := Stats{
		Registered:       c.registered.Load(),
		DrainLoops:       c.drainLoops.Load(),
		DrainStarts:      c.drainStarts.Load(),
		EpollWaits:       c.epollWaits.Load(),
		Events:           c.events.Load(),
		StaleEvents:      c.staleEvents.Load(),
		Parks:            c.parks.Load(),
		ParksInSlot:      c.parksInSlot.Load(),
		EINTR:            c.eintr.Load(),
		TimerFires:       c.timerFires.Load(),
		Harvests:         c.harvests.Load(),
		HarvestsDeferred: c.harvestsDeferred.Load(),
		Runnable:         int64(s.runnable.Load()),
		WakeupsEvent:     c.wakeupsEvent.Load(),
		WakeupsDeadline:  c.wakeupsDeadline.Load(),
		WakeupsClose:     c.wakeupsClose.Load(),
		Canceled:         c.canceled.Load(),
	}
	st.Wakeups = st.WakeupsEvent + st.WakeupsDeadline + st.WakeupsClose
	for i := range st.EventsPerWait {
		st.EventsPerWait[i] = c.perWait[i].Load()
	}
	return st
}

// PublishExpvar publishes the default poller's Stats as the expvar
// variable name (served by expvar's /debug/vars handler). Like
// expvar.Publish it panics if name is already taken: call it once.
func PublishExpvar(name string) {
	expvar.Publish(name, expvar.Func(func() any { return Default().Stats() }))
}
