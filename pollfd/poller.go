//go:build linux

package pollfd

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
)

// Poller is gatenet's epoll poller: one or more shards (epoll instances,
// each with its drain loop and token table) over which Open spreads
// descriptors round-robin, or as a key names (ShardFor; place.go). Get
// one from New or Default: on a nil or zero Poller the methods that
// return an error fail, and the others report nothing.
type Poller struct {
	opts   Options
	shards []*shard
	next   atomic.Uint32
	mu     sync.Mutex // serialises Close
	// closing is set while Close decides, and stays set once it closes:
	// an Open that counts its Desc and then finds it set waits for the
	// decision (shard.open), so Open and Close never both succeed.
	closing atomic.Bool
	envErr  error // Default's: an invalid GATENET_POLLER or GATENET_SHARDS (env.go); every Open returns it

	// started: every shard's init has succeeded (New, or Default's first
	// Open that could make the shards' descriptors). startMu orders tries.
	startMu sync.Mutex
	started atomic.Bool
}

func newPoller(opts Options) *Poller {
	n := opts.Shards
	if n <= 0 {
		n = 1
	}
	p := &Poller{opts: opts, shards: make([]*shard, n)}
	for i := range p.shards {
		p.shards[i] = &shard{poller: p, index: i, harvest: opts.Harvest, runtimePark: opts.RuntimePark}
	}
	return p
}

// Options returns the options the poller was created with.
func (p *Poller) Options() Options {
	if p == nil {
		return Options{}
	}
	return p.opts
}

// shardList is p's shards: none for a nil Poller, whose methods that
// return no error report nothing.
func (p *Poller) shardList() []*shard {
	if p == nil {
		return nil
	}
	return p.shards
}

var (
	defaultOnce   sync.Once
	defaultPoller *Poller

	// live is every shard whose epoll descriptor is open, for IsPollDescriptor.
	liveMu sync.Mutex
	live   = map[*shard]struct{}{}
)

// Default returns the process-wide poller. Its epoll instances are
// created by the first Open, with options from the GATENET_POLLER
// environment variable (see ParseOptions) or DefaultOptions, and
// GATENET_SHARDS of them (by default ShardsFor the GOMAXPROCS of
// Default's first call). If either variable is invalid, Default's poller
// has the default in its place, and every Open, OpenShard and OpenLazy on
// it fails with an *envconf.Error naming the variable, its value and what
// it accepts.
func Default() *Poller {
	defaultOnce.Do(func() {
		opts, err := optionsFromEnv()
		defaultPoller = newPoller(opts)
		defaultPoller.envErr = err
	})
	return defaultPoller
}

// New creates a poller: opts.Shards epoll instances (at least one), each
// created with epoll_create1(EPOLL_CLOEXEC) and given its drain loop.
// Close releases them. Programs normally share Default; New is for tests,
// sharding and comparing strategies.
func New(opts Options) (*Poller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	p := newPoller(opts)
	if err := p.start(); err != nil {
		for _, s := range p.shards {
			s.close()
		}
		return nil, err
	}
	return p, nil
}

// start initialises every shard: New's, and Default's at its first Open,
// so that the poller's own descriptors (epoll instances, park slots) are
// made together, as the runtime makes its poller's at its first use, and
// not one shard at a time whenever a descriptor first lands on it. A
// failure (EMFILE: the process is out of descriptors) is that Open's
// error, and the next Open tries again, where the runtime's netpollinit
// failure is fatal: a process that ran out of descriptors once may free
// some, and net's sockets work again then.
func (p *Poller) start() error {
	if p.started.Load() {
		return nil
	}
	p.startMu.Lock()
	defer p.startMu.Unlock()
	if p.started.Load() {
		return nil
	}
	for _, s := range p.shards {
		if err := s.init(); err != nil {
			return err
		}
	}
	p.started.Store(true)
	return nil
}

// Open registers fd with one of the poller's shards (round-robin):
// EPOLL_CTL_ADD with EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET and a fresh token.
// The table entry comes first, so an event that arrives before EpollCtl
// returns finds its Desc. On failure the entry is removed and the errno
// returned in an *os.SyscallError: EPERM means the descriptor cannot be
// polled (a regular file or a directory) and the caller falls back to
// blocking I/O.
func (p *Poller) Open(fd int) (*Desc, error) {
	if err := p.usable(); err != nil {
		return nil, err
	}
	return p.nextShard().open(fd, false)
}

// errNoPoller is the error of a nil Poller, or one not made by New or
// Default.
var errNoPoller = errors.New("pollfd: Poller not made by New or Default")

// usable is what every Open checks first: a nil or zero poller, the
// environment's error, else start's.
func (p *Poller) usable() error {
	if p == nil || len(p.shards) == 0 {
		return errNoPoller
	}
	if p.envErr != nil {
		return p.envErr
	}
	return p.start()
}

// nextShard is the round-robin choice of Open.
func (p *Poller) nextShard() *shard {
	if len(p.shards) == 1 {
		return p.shards[0]
	}
	return p.shards[int(p.next.Add(1))%len(p.shards)]
}

// OpenShard is Open on shard i (modulo the shard count): for keeping
// related descriptors — a listener and the connections it accepts — on
// one epoll instance.
func (p *Poller) OpenShard(fd, i int) (*Desc, error) {
	if err := p.usable(); err != nil {
		return nil, err
	}
	return p.shards[shardIndex(i, len(p.shards))].open(fd, false)
}

// OpenLazy is Open (shard < 0) or OpenShard for a descriptor the caller
// knows epoll accepts, such as a socket: the Desc joins the epoll set
// (EPOLL_CTL_ADD) only when a goroutine first waits on it or a ReadyList
// first watches it, and one closed before that is never added or deleted.
// A server connection accepted, served without blocking and closed, or a
// connect that finished inside connect(2), then costs no epoll_ctl at all.
// Readiness is never lost: a wait joins after its system call saw EAGAIN,
// and the kernel reports at EPOLL_CTL_ADD any readiness that arrived
// since. A failure to join is the error of that first wait.
func (p *Poller) OpenLazy(fd, shard int) (*Desc, error) {
	if err := p.usable(); err != nil {
		return nil, err
	}
	if shard < 0 {
		return p.nextShard().open(fd, true)
	}
	return p.shards[shardIndex(shard, len(p.shards))].open(fd, true)
}

// shardIndex is i modulo n for OpenShard, a negative i as -i (whose
// negation overflows for the smallest int, so it is taken modulo n
// first).
func shardIndex(i, n int) int {
	if i < 0 {
		return -(i % n)
	}
	return i % n
}

// Shards reports how many epoll instances the poller has.
func (p *Poller) Shards() int { return len(p.shardList()) }

// ErrPollerBusy is returned by (*Poller).Close while descriptors are
// still registered.
var ErrPollerBusy = errors.New("pollfd: Close with descriptors still registered")

// Close stops every shard's drain loop and closes its epoll descriptor.
// Every Desc must have been closed first (ErrPollerBusy otherwise), and
// an Open concurrent with Close either makes it refuse so or fails with
// os.ErrClosed. Closing Default is refused.
func (p *Poller) Close() error {
	if p == nil || len(p.shards) == 0 {
		return errNoPoller
	}
	if p == defaultPoller {
		return errors.New("pollfd: the default poller cannot be closed")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shards[0].closed.Load() {
		return os.ErrClosed
	}
	p.closing.Store(true) // before reading the counts: shard.open
	if p.Stats().Registered != 0 {
		p.closing.Store(false)
		return ErrPollerBusy
	}
	var err error
	for _, s := range p.shards {
		if cerr := s.close(); err == nil {
			err = cerr
		}
	}
	return err
}

// IsPollDescriptor reports whether fd is one of the descriptors a live
// poller owns itself (its epoll instances, the dups of them that the
// nested strategy parks in the runtime poller, the dedicated strategy's
// wake-up eventfds, or the park slots' eventfds). Code that closes every descriptor it does not know,
// as os/exec's tests do, must leave these alone. It mirrors the runtime's
// isPollServerDescriptor.
func IsPollDescriptor(fd int) bool {
	liveMu.Lock()
	defer liveMu.Unlock()
	for s := range live {
		if s.isPollDescriptor(fd) {
			return true
		}
	}
	return false
}

// IsPollDescriptor reports whether fd belongs to this poller itself.
func (p *Poller) IsPollDescriptor(fd int) bool {
	for _, s := range p.shardList() {
		if s.isPollDescriptor(fd) {
			return true
		}
	}
	return false
}
