//go:build linux

package pollfd

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Poller is one epoll instance with its drain loop and token table.
type Poller struct {
	opts    Options
	harvest bool // Options.Harvest, read on every Wait

	initOnce sync.Once
	initErr  error

	epfd   int
	loop   drainLoop // strategy.go
	table  table
	stats  counters
	closed atomic.Bool
	inited atomic.Bool // init succeeded: epfd and loop are set
	mu     sync.Mutex  // serialises Close
}

// Stats is a snapshot of a poller's counters.
type Stats struct {
	Registered  int64  // descriptors registered now
	EpollWaits  uint64 // epoll_wait calls by the drain loop that returned events or timed out
	Events      uint64 // events delivered to a registered descriptor
	StaleEvents uint64 // events whose token was no longer registered (dropped)
	Wakeups     uint64 // parked waiters woken (by an event, a deadline or Unblock)
	Parks       uint64 // Waits that parked
	EINTR       uint64 // epoll_wait calls interrupted by a signal, and retried
	TimerFires  uint64 // deadlines that expired by their timer
	Harvests    uint64 // waiter-side epoll_wait(0) calls that found events
}

type counters struct {
	registered  atomic.Int64
	epollWaits  atomic.Uint64
	events      atomic.Uint64
	staleEvents atomic.Uint64
	wakeups     atomic.Uint64
	parks       atomic.Uint64
	eintr       atomic.Uint64
	timerFires  atomic.Uint64
	harvests    atomic.Uint64
}

// Stats returns the poller's counters.
func (p *Poller) Stats() Stats {
	c := &p.stats
	return Stats{
		Registered:  c.registered.Load(),
		EpollWaits:  c.epollWaits.Load(),
		Events:      c.events.Load(),
		StaleEvents: c.staleEvents.Load(),
		Wakeups:     c.wakeups.Load(),
		Parks:       c.parks.Load(),
		EINTR:       c.eintr.Load(),
		TimerFires:  c.timerFires.Load(),
		Harvests:    c.harvests.Load(),
	}
}

// Options returns the options the poller was created with.
func (p *Poller) Options() Options { return p.opts }

var (
	defaultOnce   sync.Once
	defaultPoller *Poller

	// live is every poller whose epoll descriptor is open, for IsPollDescriptor.
	liveMu sync.Mutex
	live   = map[*Poller]struct{}{}
)

// Default returns the process-wide poller. Its epoll instance is created
// lazily by the first Open, with options from the GATENET_POLLER environment
// variable (see ParseOptions) or DefaultOptions.
func Default() *Poller {
	defaultOnce.Do(func() {
		opts := DefaultOptions()
		if s := os.Getenv("GATENET_POLLER"); s != "" {
			if o, err := ParseOptions(s); err == nil {
				opts = o
			}
		}
		defaultPoller = &Poller{opts: opts, harvest: opts.Harvest}
	})
	return defaultPoller
}

// New creates a poller: epoll_create1(EPOLL_CLOEXEC) and its drain loop.
// Close releases both. Programs normally share Default; New is for tests,
// sharding and comparing strategies.
func New(opts Options) (*Poller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	p := &Poller{opts: opts, harvest: opts.Harvest}
	if err := p.init(); err != nil {
		return nil, err
	}
	return p, nil
}

// init is pollServerInit: once per poller.
func (p *Poller) init() error {
	p.initOnce.Do(func() {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			p.initErr = os.NewSyscallError("epoll_create1", err)
			return
		}
		p.epfd = epfd
		if err := p.loop.start(p); err != nil {
			unix.Close(epfd)
			p.initErr = err
			return
		}
		p.inited.Store(true)
		liveMu.Lock()
		live[p] = struct{}{}
		liveMu.Unlock()
	})
	return p.initErr
}

// Open registers fd with the poller: EPOLL_CTL_ADD with
// EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET and a fresh token. The table entry
// comes first, so an event that arrives before EpollCtl returns finds its
// Desc. On failure the entry is removed and the errno returned in an
// *os.SyscallError: EPERM means the descriptor cannot be polled (a regular
// file or a directory) and the caller falls back to blocking I/O.
func (p *Poller) Open(fd int) (*Desc, error) {
	if err := p.init(); err != nil {
		return nil, err
	}
	if p.closed.Load() {
		return nil, os.ErrClosed
	}
	d := &Desc{poller: p, fd: fd}
	d.rg.wake = make(chan struct{}, 1)
	d.wg.wake = make(chan struct{}, 1)
	if !p.table.insert(d) {
		return nil, os.NewSyscallError("epoll_ctl", unix.ENOSPC)
	}
	ev := unix.EpollEvent{Events: registerEvents}
	setToken(&ev, d.token)
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		p.table.remove(d)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	p.stats.registered.Add(1)
	return d, nil
}

// dispatch hands a batch of events to their descriptors.
func (p *Poller) dispatch(events []unix.EpollEvent) {
	delivered, stale := 0, 0
	for i := range events {
		ev := &events[i]
		token := eventToken(ev)
		if token == shutdownToken {
			continue
		}
		d := p.table.lookup(token)
		if d == nil {
			stale++
			continue
		}
		d.deliver(ev.Events)
		delivered++
	}
	if delivered > 0 {
		p.stats.events.Add(uint64(delivered))
	}
	if stale > 0 {
		p.stats.staleEvents.Add(uint64(stale))
	}
}

// ErrPollerBusy is returned by (*Poller).Close while descriptors are
// still registered.
var ErrPollerBusy = errors.New("pollfd: Close with descriptors still registered")

// Close stops the drain loop and closes the epoll descriptor. Every Desc
// must have been closed first. Closing Default is refused.
func (p *Poller) Close() error {
	if p == defaultPoller {
		return errors.New("pollfd: the default poller cannot be closed")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return os.ErrClosed
	}
	if p.stats.registered.Load() != 0 {
		return ErrPollerBusy
	}
	p.closed.Store(true)
	if !p.inited.Load() {
		return nil
	}
	liveMu.Lock()
	delete(live, p)
	liveMu.Unlock()
	err := p.loop.stop(p)
	if cerr := unix.Close(p.epfd); err == nil && cerr != nil {
		err = os.NewSyscallError("close", cerr)
	}
	return err
}

// IsPollDescriptor reports whether fd is one of the descriptors a live
// poller owns itself (its epoll instance, the dup of it that the nested
// strategy parks in the runtime poller, or the dedicated strategy's
// shutdown eventfd). Code that closes every descriptor it does not know, as
// os/exec's tests do, must leave these alone. It mirrors the runtime's
// isPollServerDescriptor.
func IsPollDescriptor(fd int) bool {
	liveMu.Lock()
	defer liveMu.Unlock()
	for p := range live {
		if p.IsPollDescriptor(fd) {
			return true
		}
	}
	return false
}

// IsPollDescriptor reports whether fd belongs to this poller itself.
func (p *Poller) IsPollDescriptor(fd int) bool {
	if fd < 0 || !p.inited.Load() || p.closed.Load() {
		return false
	}
	return fd == p.epfd || (p.loop.eventfd > 0 && fd == p.loop.eventfd) ||
		(p.loop.epdup > 0 && fd == p.loop.epdup)
}
