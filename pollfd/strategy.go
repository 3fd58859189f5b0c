//go:build linux

package pollfd

// How a poller waits for epoll. The gate, token, deadline and close
// semantics do not depend on it; only where the cross-thread wake-ups fall
// does.
//
// Dedicated: one goroutine, locked to its own OS thread, blocked in
// epoll_wait(-1). It needs nothing from the runtime's poller, but every
// readiness costs a wake-up of that thread and then a second one, of the
// waiter, by the scheduler, so its round trips are the slowest of the
// strategies (docs/DESIGN.md, "The hop, and why latency is the hard
// part").
//
// Nested: the epoll descriptor is itself registered with the Go runtime's
// poller (it is readable whenever it has events), and the drain goroutine
// parks in the runtime, not in a system call. When the runtime reports the
// epoll fd readable, the goroutine drains it with epoll_wait(…, 0) until it
// comes back short and parks again. No thread is dedicated; the runtime's
// scheduler wakes the drain goroutine as it wakes any network waiter.
// Edge-triggered nesting is sound here because the drain always empties
// the ready list before parking: any later event makes the epoll fd
// readable anew, which is a new edge for the runtime.
//
// Harvest (combinable with either): a waiter about to park first runs
// epoll_wait(…, 0) itself and delivers what it finds, for any descriptor,
// on its own thread. In request/response traffic the answer has usually
// arrived by then, so the waiter returns without parking and the goroutine
// it readied runs on this P with no thread woken. Concurrent epoll_wait
// calls on one epoll fd are safe: each event goes to exactly one caller,
// which delivers it, so nothing is lost whoever takes it. A waiter
// harvests only while no waiter its shard woke is still waiting to run
// (harvestNow says why).
//
// RuntimePark (combinable with either, "+rpark"; slots.go) moves the
// waiter's park from its gate into the runtime's poller, on a pooled
// eventfd, trading the scheduler's wake of an idle P (a futex wake per
// readied goroutine) for an eventfd write the runtime's poller picks up on
// the thread going idle.
//
// The default is nested+harvest+rpark: each part saves a thread wake-up
// per message, and only pipe ping-pong, where a system call is cheap next
// to the eventfd write a slot adds, pays for one of them. GATENET_POLLER
// selects any other combination. The measurements that chose it, and the
// ones that chose its parts before it, are in docs/PERFORMANCE.md; why a
// poller with its own epoll instance is bounded on ping-pong is in
// docs/DESIGN.md, "The hop, and why latency is the hard part".

import (
	"sync"

	"golang.org/x/sys/unix"
)

// harvestBatch is how many events a waiter collects before it parks.
const harvestBatch = 16

// harvester is a shard's waiter-side epoll_wait(…, 0) (see the top of this
// file): one buffer, taken with TryLock. A waiter that finds it taken
// parks without harvesting, since another thread is collecting for
// everyone at that moment; the drain loop remains the backstop. The
// buffer is the shard's, not the waiter's stack, which parks right after
// (docs/DESIGN.md, "Stack depth").
type harvester struct {
	mu  sync.Mutex
	buf [harvestBatch]unix.EpollEvent
}

// harvestNow is the waiter-side epoll_wait(…, 0). Wait and WaitContext call
// it (through Desc.harvest) before they descend into wait, from the
// shallowest frame they have.
//
// It is called only while none of the shard's woken waiters is still
// waiting to run (shard.runnable is 0). A goroutine readied from Go code
// goes to the front of its P's run queue (runtime.runnext) and inherits
// the time slice of the one that readied it; a harvester parks right
// after, so what it readies runs next, harvests in turn and readies the
// next: a chain that runs ahead of every goroutine already queued until a
// harvest comes up empty or the scheduler preempts it. When a woken
// waiter is still queued, the harvest would jump it; left to the drain
// loop, whose wake-up the runtime's poller queues behind the goroutines
// already runnable, events wait their turn as net's do. In
// request/response traffic on a few connections nothing is queued when a
// waiter parks, and the harvest works as before (docs/DESIGN.md, "Harvest
// fairness").
func (s *shard) harvestNow() {
	h := &s.harvester
	if !h.mu.TryLock() {
		return
	}
	if !s.closed.Load() { // else epfd's number may be another epoll's now (close)
		n, errno := epollWaitNow(s.epfd, h.buf[:])
		if errno == 0 && n > 0 {
			s.stats.harvests.Add(1)
			s.dispatch(h.buf[:n], false)
		}
	}
	h.mu.Unlock()
}
