//go:build linux

package pollfd

import (
	"math/bits"
	"sync/atomic"
	"time"
)

type counters struct {
	registered       atomic.Int64
	epollAdds        atomic.Uint64
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
	wakeupsKick      atomic.Uint64
	canceled         atomic.Uint64
	drainEvents      atomic.Uint64
	drainWakeups     atomic.Uint64
	drainNanos       atomic.Uint64
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
	for _, s := range p.shardList() {
		t.add(s.snapshot())
	}
	return t
}

// ShardStats returns each shard's counters.
func (p *Poller) ShardStats() []Stats {
	shards := p.shardList()
	out := make([]Stats, len(shards))
	for i, s := range shards {
		out[i] = s.snapshot()
	}
	return out
}

func (s *shard) snapshot() Stats {
	c := &s.stats
	st := Stats{
		Registered:       c.registered.Load(),
		EpollAdds:        c.epollAdds.Load(),
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
		WakeupsKick:      c.wakeupsKick.Load(),
		Canceled:         c.canceled.Load(),
		DrainEvents:      c.drainEvents.Load(),
		DrainWakeups:     c.drainWakeups.Load(),
		DrainTime:        time.Duration(c.drainNanos.Load()),
	}
	st.Wakeups = st.WakeupsEvent + st.WakeupsDeadline + st.WakeupsClose + st.WakeupsKick
	for i := range st.EventsPerWait {
		st.EventsPerWait[i] = c.perWait[i].Load()
	}
	return st
}
