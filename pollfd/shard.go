//go:build linux

package pollfd

import (
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// shard is one epoll instance with its drain loop and token table. A
// Poller spreads its descriptors over one or more shards; each descriptor's
// events are drained, harvested and delivered by its own shard only.
type shard struct {
	poller  *Poller
	index   int
	harvest bool // Options.Harvest, read on every Wait

	harvester harvester // strategy.go
	// runnable counts the shard's waiters that a waker has woken and that
	// have not run since (gate.woken): goroutines in the scheduler's
	// queues. A harvest waits while there are any (harvestNow).
	runnable atomic.Int32
	procs    int32 // the shard's share of GOMAXPROCS when it started: runnable ≥ procs is a busy scheduler (Desc.harvest)

	runtimePark bool      // Options.RuntimePark
	parkSlots   parkSlots // slots.go

	initMu sync.Mutex // orders init's tries, and close after them

	epfd   int
	loop   drainLoop // drain.go
	table  table
	stats  counters
	closed atomic.Bool
	inited atomic.Bool // init succeeded: epfd and loop are set
}

// init is pollServerInit, until it succeeds: a failed try releases what
// it made, and the next call tries again (Poller.start).
func (s *shard) init() error {
	if s.inited.Load() {
		return nil
	}
	s.initMu.Lock()
	defer s.initMu.Unlock()
	if s.inited.Load() {
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	s.epfd = epfd
	s.procs = int32(procsOfShard(runtime.GOMAXPROCS(0), len(s.poller.shards)))
	if s.runtimePark {
		if err := s.parkSlots.start(parkSlotsPerP * int(s.procs)); err != nil {
			unix.Close(epfd)
			return err
		}
	}
	if err := s.loop.start(s); err != nil {
		s.parkSlots.stop()
		unix.Close(epfd)
		return err
	}
	s.inited.Store(true)
	liveMu.Lock()
	live[s] = struct{}{}
	liveMu.Unlock()
	return nil
}

// procsOfShard is one shard's share of procs Ps among shards, rounded up.
func procsOfShard(procs, shards int) int { return max(1, (procs+shards-1)/shards) }

// open is pollOpen: table entry first, then EPOLL_CTL_ADD, unless lazy
// (OpenLazy), when the Desc joins the epoll set at its first wait.
func (s *shard) open(fd int, lazy bool) (*Desc, error) {
	if err := s.init(); err != nil {
		return nil, err
	}
	if err := s.reserve(); err != nil {
		return nil, err
	}
	if fd < 0 || fd > math.MaxInt32 { // no such descriptor number (EBADF, as epoll_ctl says)
		s.unreserve()
		return nil, os.NewSyscallError("epoll_ctl", unix.EBADF)
	}
	d := &Desc{shard: s, fd: int32(fd)}
	if id := currentBubble(); id != 0 {
		d.state.Store(descBubble)
		d.ext = &descExt{bubble: id}
	}
	if !s.table.insert(d) {
		s.unreserve()
		return nil, os.NewSyscallError("epoll_ctl", unix.ENOSPC)
	}
	if !lazy {
		if err := d.join(0); err != nil {
			s.table.remove(d)
			s.unreserve()
			return nil, err
		}
	}
	s.loop.registered(s)
	return d, nil
}

// reserve counts a Desc about to be opened in Stats.Registered, unless
// the poller is closed. The count comes before the look at closing, and
// Poller.Close sets closing before it reads the counts, so one of them
// sees the other: Close finds the count and is refused (ErrPollerBusy),
// or open finds closing, takes the count back and waits for Close's
// decision (the poller's mu), then fails if it closed.
func (s *shard) reserve() error {
	for {
		s.stats.registered.Add(1)
		if !s.poller.closing.Load() {
			return nil
		}
		s.unreserve()
		s.poller.mu.Lock() // held by Close while it decides
		closed := s.closed.Load()
		s.poller.mu.Unlock()
		if closed {
			return os.ErrClosed
		}
	}
}

// unreserve takes back reserve's count, for an open that failed.
func (s *shard) unreserve() {
	if s.stats.registered.Add(-1) == 0 {
		s.loop.unregistered(s)
	}
}

// dispatch hands a batch of events to their descriptors; drained says
// the drain loop fetched them (a harvest did otherwise), for
// Stats.DrainEvents and DrainWakeups. It reports whether the batch held
// the dedicated loop's wake-up (wakeToken).
func (s *shard) dispatch(events []unix.EpollEvent, drained bool) (woken bool) {
	stale, delivered, woke := 0, 0, 0
	for i := range events {
		ev := &events[i]
		token := eventToken(ev)
		if token == wakeToken {
			woken = true
			continue
		}
		d := s.table.lookup(token)
		if d == nil {
			stale++
			continue
		}
		woke += d.deliver(ev.Events) // counts it in Stats.Events
		delivered++
	}
	if stale > 0 {
		s.stats.staleEvents.Add(uint64(stale))
	}
	if drained && delivered > 0 {
		s.stats.drainEvents.Add(uint64(delivered))
		if woke > 0 {
			s.stats.drainWakeups.Add(uint64(woke))
		}
	}
	return woken
}

// close stops the drain loop and closes the epoll descriptor.
func (s *shard) close() error {
	s.closed.Store(true)
	s.initMu.Lock() // a try under way ends first
	inited := s.inited.Load()
	s.initMu.Unlock()
	if !inited {
		return nil
	}
	liveMu.Lock()
	delete(live, s)
	liveMu.Unlock()
	err := s.loop.stop(s)
	s.parkSlots.stop()
	// Under the harvester's lock: a harvest that began before closed was
	// set ends before epfd closes, and one that begins after sees closed
	// (harvestNow), so none reads another epoll that reuses the number.
	s.harvester.mu.Lock()
	cerr := unix.Close(s.epfd)
	s.harvester.mu.Unlock()
	if err == nil && cerr != nil {
		err = os.NewSyscallError("close", cerr)
	}
	return err
}

// isPollDescriptor reports whether fd is one of the shard's own.
func (s *shard) isPollDescriptor(fd int) bool {
	if fd < 0 || !s.inited.Load() || s.closed.Load() {
		return false
	}
	return fd == s.epfd || (s.loop.eventfd > 0 && fd == s.loop.eventfd) ||
		(s.loop.epdup > 0 && fd == s.loop.epdup) || s.parkSlots.isSlot(fd)
}
