//go:build linux

package pollfd

// Park slots: parking in the runtime's poller (Options.RuntimePark, part
// of the default: strategy.go).
//
// A waiter parked on its gate is readied from Go code (goready), and
// with two or more Ps every goroutine readied from Go code makes the
// scheduler wake an idle P's thread (runtime.ready → wakep), a futex wake
// and often a migration per message. The runtime's own poller readies its
// goroutines from findrunnable, on the thread that is going idle, with no
// such wake: that is where net's ping-pong speed comes from (docs/DESIGN.md,
// "The hop, and why latency is the hard part").
//
// So a parking waiter may borrow a park slot: an eventfd registered with
// the runtime's poller through an *os.File. It parks in the slot's
// RawConn.Read, and its waker, instead of readying it, writes
// the eventfd; the runtime's poller then sees the slot readable and hands
// the waiter to the next thread that looks for work. The eventfd is never
// read: it is edge-triggered in the runtime, and every write is a new edge
// (its counter would take centuries to saturate).
//
// A slot is one medium of the park (park.go tells the sequence): the
// waiter publishes waiting and the slot under mu; the waker that clears
// waiting clears the slot and writes the eventfd, under mu. The parked
// function (wokenFn) looks at waiting under mu: cleared means woken.
// RawRead resets the slot's readiness before it first calls that
// function, so a write that lands before the reset has already cleared
// waiting, and the first look sees it; a write after the reset is a
// readiness the runtime reports. A write meant for an earlier user of the
// slot can only make a later user look again and park again: spurious,
// harmless. A waiter gives its slot back only once no waker can write it
// (its park claimed, or withdrawn, under mu).
//
// Slots are few (parkSlotsPerP per P of the shard's share of them, made
// when the shard starts, so a
// shard's descriptor count does not change under a running program), and
// a waiter that finds none, or whose wait can be cancelled by a context,
// parks on its gate as before. Slots go to whoever parks first and are
// held for the whole park, so with many idle connections most parks fall
// back to the gate, as without the option: the gain is where few waiters
// are parked at a time (request/response on a handful of busy
// connections), and its cost, the eventfd write, shows only where the I/O
// itself is as cheap (pipe ping-pong; docs/PERFORMANCE.md).
//
// Nor does a waiter take a slot while as many waiters as its shard has
// Ps, woken by the shard, are still queued (Desc.harvest reports busy).
// Then no P is idle for goready's wake-up to cost anything, and a slot's waiter
// would be run only when some thread, out of work, next consults the
// runtime's poller: where many clients connect at once, slots cost
// connection rate (docs/PERFORMANCE.md has the measurement).

import (
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// parkSlotsPerP is how many park slots a shard makes per P of its share
// (shard.procs: all of them with one shard). More lose on
// many-connection servers (more eventfd writes, more server CPU per
// request) and gain nothing on ping-pong (docs/PERFORMANCE.md).
const parkSlotsPerP = 2

// parkSlot is an eventfd a waiter parks on in the runtime's poller.
type parkSlot struct {
	efd  int
	file *os.File
	rc   syscall.RawConn
	// d and g are the current waiter's, set while it holds the slot.
	d     *Desc
	g     *gate
	woken func(uintptr) bool // s.wokenFn, bound once: parking allocates nothing
	// list and listWoken are a ReadyList's Next's, asleep in the slot
	// (ready.go), guarded by the list's mu.
	list        *ReadyList
	listWoken   bool
	listWokenFn func(uintptr) bool
	// deadline: a slot of one park's own, not the shard's, whose read
	// deadline is the gate's deadline generation dl (bubble.go).
	deadline bool
	dl       uint32
	// ctxDeadline: a slot of one park's own whose read deadline is the
	// context's deadline (realClockCtxSlotLocked); ctxExpired: it ended
	// the park.
	ctxDeadline, ctxExpired bool
}

// parkSlots is a shard's free list of slots.
type parkSlots struct {
	mu      sync.Mutex
	free    []*parkSlot
	all     []*parkSlot
	stopped bool
}

// start makes the shard's n slots (all free; stop closes them).
func (ps *parkSlots) start(n int) error {
	ps.mu.Lock()
	ps.stopped = false // a failed try before this one stopped them
	ps.mu.Unlock()
	for range n {
		s, err := newParkSlot()
		if err != nil {
			ps.stop()
			return err
		}
		ps.all = append(ps.all, s)
		ps.free = append(ps.free, s)
	}
	return nil
}

func newParkSlot() (*parkSlot, error) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("eventfd", err)
	}
	// Non-blocking already, so os.NewFile registers it with the runtime's
	// poller.
	s := &parkSlot{efd: efd, file: os.NewFile(uintptr(efd), "pollfd-park")}
	if s.rc, err = s.file.SyscallConn(); err != nil {
		s.file.Close()
		return nil, err
	}
	s.woken = s.wokenFn
	s.listWokenFn = s.listWoke
	return s, nil
}

// stop closes the free slots; a slot in use is closed when its waiter
// gives it back (put), never under it: a waker may still write its eventfd,
// and a closed number could by then belong to someone else.
func (ps *parkSlots) stop() {
	ps.mu.Lock()
	free := ps.free
	ps.all, ps.free, ps.stopped = nil, nil, true
	ps.mu.Unlock()
	for _, s := range free {
		s.file.Close()
	}
}

func (ps *parkSlots) get() *parkSlot {
	ps.mu.Lock()
	var s *parkSlot
	if n := len(ps.free); n > 0 {
		s = ps.free[n-1]
		ps.free = ps.free[:n-1]
	}
	ps.mu.Unlock()
	return s
}

func (ps *parkSlots) put(s *parkSlot) {
	s.d, s.g = nil, nil
	ps.mu.Lock()
	stopped := ps.stopped
	if !stopped {
		ps.free = append(ps.free, s)
	}
	ps.mu.Unlock()
	if stopped {
		s.file.Close() // its waiter is gone and no waker holds it
	}
}

// isSlot reports whether fd is one of the slots' eventfds.
func (ps *parkSlots) isSlot(fd int) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, s := range ps.all {
		if s.efd == fd {
			return true
		}
	}
	return false
}

// wokenFn is the parked function: woken once a waker cleared waiting.
func (s *parkSlot) wokenFn(uintptr) bool {
	s.d.mu.Lock()
	woken := !s.g.waiting
	s.d.mu.Unlock()
	return woken
}

// listWoke is the parked function of a ReadyList's Next (ready.go):
// woken once a report chose it.
func (s *parkSlot) listWoke(uintptr) bool {
	s.list.mu.Lock()
	woken := s.listWoken
	s.list.mu.Unlock()
	return woken
}

var eventfdOne = [8]byte{1} // native-endian 1 on every little-endian Linux port; any non-zero value wakes

// signal is the waker's half: one eventfd write, a new edge for the
// runtime's poller. Called with the waiter's mu held. A raw system call:
// a write to a non-blocking eventfd of the shard's own never waits, and
// the drain loop that makes it, often the first goroutine to run after
// every P went idle, would otherwise wake sysmon from its deep sleep for
// nothing (internal/poll/fd_sys.go says what that costs).
func (s *parkSlot) signal() {
	for {
		_, _, err := unix.RawSyscall(unix.SYS_WRITE, uintptr(s.efd), uintptr(unsafe.Pointer(&eventfdOne[0])), uintptr(len(eventfdOne)))
		if err != unix.EINTR {
			return // EAGAIN (a saturated counter) is still readable: the waiter is woken
		}
	}
}

// sleep is the slot medium's sleep (park.go): the waiter, which has
// published waiting and this slot under mu and released it, sleeps in the
// runtime's poller until a waker clears waiting. The slot's file is not
// closed while it is lent (stop leaves it to put), so Read fails only if
// that promise is broken; parkLocked then withdraws the park, if no waker
// has claimed it, and the wait loop parks again.
func (s *parkSlot) sleep() { _ = s.rc.Read(s.woken) }
