//go:build linux

package pollfd

// How a poller waits for epoll. The gate, token, deadline and close
// semantics do not depend on it; only where the cross-thread wake-ups fall
// does.
//
// Dedicated (the seed design's form): one goroutine, locked to its own OS
// thread, blocked in epoll_wait(-1). It needs nothing from the runtime's
// poller, but every readiness costs a wake-up of that thread and then a
// second one, of the waiter, by the scheduler: on 2 vCPUs a round trip costs
// about four times what it costs on net (docs/DESIGN.md, "The hop").
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
// which delivers it, so nothing is lost whoever takes it.
//
// Nested + harvest was chosen over the other three by measurement: cmd/pipebench
// (pipe ping-pong against os.Pipe) and cmd/sockbench (64-byte TCP
// ping-pong against net), medians of 5 alternating rounds, each in a fresh
// process, on the quiet 2-core reference machine. Throughput as a ratio of
// the standard library's (CPU per round trip in brackets):
//
//	                    pipe 1 B      pipe 4 KiB    TCP 64 B
//	dedicated           0.12 (7.5×)   0.13 (6.4×)   0.27 (3.5×)
//	dedicated+harvest   0.63 (1.9×)   0.58 (2.2×)   0.67 (1.8×)
//	nested              0.57 (1.8×)   0.57 (1.8×)   0.65 (1.8×)
//	nested+harvest      0.75 (1.5×)   0.70 (1.6×)   0.75 (1.5×)
//
// With harvesting, most events are taken by a waiter about to park, on its
// own thread. The dedicated thread, always blocked in epoll_wait(-1), makes
// the kernel wake it (a cross-CPU wake-up inside the writer's system call)
// for every event, and when it wins the race for the event the waiter is
// readied from another thread. Nested leaves the epoll fd to the runtime's
// poller, which the scheduler consults on the thread that is going idle.
// (Under load from other processes the two harvest forms come closer and
// their order can flip; the figures above are from a quiet machine.)
//
// RuntimePark (combinable with either, "+rpark"; park.go) moves the
// waiter's park from its gate into the runtime's poller, on a pooled
// eventfd, trading the scheduler's wake of an idle P (a futex wake per
// readied goroutine) for an eventfd write the runtime's poller picks up on
// the thread going idle. cmd/gatebench, nested+harvest without and with it,
// three A/B runs of 3 rounds, medians of the ratio to the standard library
// (CPU per operation in brackets):
//
//	                    TCP ping-pong   http (64 clients)   pipe ping-pong   echo-many
//	nested+harvest      0.71 (1.62×)    0.85 (1.21×)        0.67 (1.68×)     1.43 (0.87×)
//	  +rpark            0.71 (1.41×)    0.98 (1.05×)        0.54 (1.85×)     1.43 (0.93×)
//
// and again once the gate's own park had become the runtime's gopark
// instead of a channel receive (sema_runtime.go), 2026-12-01:
//
//	nested+harvest      0.78 (1.45×)    0.98 (1.05×)        0.68 (1.65×)     1.34 (0.98×)
//	  +rpark            0.75 (1.34×)    0.99 (1.03×)        0.64 (1.57×)     1.40 (0.95×)
//
// and on the reference machine as it is now (a Firecracker VM, Linux 6.18,
// where net makes 240k round trips/s), 2026-12-01: cmd/gatebench, three
// runs of 5 rounds each way, medians of the ratio (range; CPU per
// operation as a ratio of net's in brackets):
//
//	                TCP ping-pong            p99 ↓   accept         http   pipe ping-pong
//	nested+harvest  0.72 (0.71–0.72; 1.54×)  4.23×   1.33 (0.73×)   0.97   0.67 (1.67×)
//	  +rpark        0.75 (0.74–0.76; 1.34×)  1.34×   1.77 (0.51×)   0.97   0.62 (1.62×)
//
// and alike (within 0.03) on bulk, echo-many, wrk, tls and scale; in
// process, UDP 512 B echo 0.73 of net at 1.36× its CPU instead of 0.70 at
// 1.57×, and pipe bulk 0.82 of os.Pipe instead of 0.75.
//
// Why the tail moves so much on this machine: a go tool trace of the
// ping-pong without it shows the goroutine that readied its peer taking up
// to 15 µs to park (the futex wake of the idle P's thread, in the
// hypervisor an inter-processor interrupt), and 900 of its 16,000 system
// calls taking 6–7 µs (writes, where we looked) instead of 1.1: what a
// write costs when it readies a descriptor and so wakes a thread blocked
// in the runtime's epoll_wait, where the epoll descriptor is registered
// (our reading: the woken thread, idle again, waits there). 1,211 P
// wake-ups in 20 ms of trace, where net's ping-pong has 12. A park in a
// slot readies through the runtime's poller, on the thread going idle, and
// wakes no thread.
//
// So RuntimePark is now part of the default: it wins or ties on every
// socket workload and wins on pipe streaming, and costs pipe ping-pong,
// where a system call is cheap next to the eventfd write it adds, 7%.
// GATENET_POLLER=nested+harvest keeps the gate's own park.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
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
	// Shards is how many epoll instances descriptors are spread over
	// (round-robin), each with its own drain loop; 0 means 1. A waiter
	// harvests only its own shard.
	Shards int
	// RuntimePark lets a parking waiter wait in the Go runtime's poller,
	// on one of a few eventfds, so that its wake-up needs no thread wake
	// (park.go).
	RuntimePark bool
}

// DefaultOptions returns what Default uses unless GATENET_POLLER says
// otherwise: Nested with Harvest and RuntimePark (see the measurements
// above).
func DefaultOptions() Options { return Options{Strategy: Nested, Harvest: true, RuntimePark: true} }

// String gives the form ParseOptions reads: "nested", "dedicated",
// "nested+harvest", "dedicated+harvest", any of them with "+rpark"
// (RuntimePark, as "nested+harvest+rpark"); more than one shard adds
// "/N-shards" (ParseOptions leaves shards to GATENET_SHARDS).
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
	return nil
}

// ParseOptions reads the String form of Options.
func ParseOptions(s string) (Options, error) {
	var o Options
	parts := strings.Split(strings.TrimSpace(s), "+")
	switch parts[0] {
	case "nested":
		o.Strategy = Nested
	case "dedicated":
		o.Strategy = Dedicated
	default:
		return o, fmt.Errorf("pollfd: unknown strategy %q (want nested or dedicated, optionally +harvest and +rpark)", s)
	}
	for _, extra := range parts[1:] {
		switch {
		case extra == "harvest" && !o.Harvest:
			o.Harvest = true
		case extra == "rpark" && !o.RuntimePark:
			o.RuntimePark = true
		default:
			return o, fmt.Errorf("pollfd: unknown or repeated option %q in %q", extra, s)
		}
	}
	return o, nil
}

// harvestBatch is how many events a waiter collects before it parks.
const harvestBatch = 16

// harvester is a shard's waiter-side epoll_wait(…, 0) (see the top of this
// file): one buffer, taken with TryLock. A waiter that finds it taken
// parks without harvesting, since another thread is collecting for
// everyone at that moment; the drain loop remains the backstop. The
// buffer is here rather than on the waiter's stack because the waiter
// parks right after: every byte of the deepest frame it reaches is a byte
// its goroutine's stack must hold for as long as the connection idles
// (a 2 KiB stack that overflows doubles, and never shrinks back while
// parked).
type harvester struct {
	mu  sync.Mutex
	buf [harvestBatch]unix.EpollEvent
}

// harvestNow is the waiter-side epoll_wait(…, 0). Wait and WaitContext call
// it before they descend into wait, from the shallowest frame they have.
//
// It harvests only while none of the shard's woken waiters is still
// waiting to run. A goroutine readied from Go code goes to the front of
// its P's run queue (runtime.runnext) and inherits the time slice of the
// one that readied it; a harvester parks right after, so what it readies
// runs next, harvests in turn and readies the next: a chain that runs
// ahead of every goroutine already queued until the scheduler preempts it
// (10 ms). When a woken waiter is still queued, the harvest would jump it;
// left to the drain loop, whose wake-up the runtime's poller queues
// behind the goroutines already runnable, events wait their turn as
// net's do. In request/response traffic on a few connections nothing is
// queued when a waiter parks, and the harvest works as before.
func (p *shard) harvestNow() {
	if p.runnable.Load() > 0 {
		p.stats.harvestsDeferred.Add(1)
		return
	}
	h := &p.harvester
	if !h.mu.TryLock() {
		return
	}
	n, errno := epollWaitNow(p.epfd, h.buf[:])
	if errno == 0 && n > 0 {
		p.stats.harvests.Add(1)
		p.dispatch(h.buf[:n])
	}
	h.mu.Unlock()
}
