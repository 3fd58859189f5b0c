//go:build linux

package main

// The measuring machinery: a round's result, timed loops for one or many
// clients, a latency histogram, medians with ranges, and the memory
// snapshot of the idle workload.

import (
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// result is one round: one workload against one server, measured in a
// child process of its own. The child prints it as JSON.
type result struct {
	Workload string  `json:"workload"`
	Server   string  `json:"server"`
	Round    int     `json:"round,omitempty"`
	Ops      int64   `json:"ops"`    // round trips, messages, connections, or held conns (idle)
	Bytes    int64   `json:"bytes"`  // bytes echoed back to the clients
	Seconds  float64 `json:"secs"`   // wall time of the measured part
	CPUNanos int64   `json:"cpu_ns"` // the process's user+system CPU in the measured part (clients and server)
	// Extra holds the workload's further figures: "p50_us", "p99_us"
	// (latency of one operation), "bytes_per_conn" (idle).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// rate is operations per second.
func (r result) rate() float64 { return float64(r.Ops) / r.Seconds }

// cpuNanos is this process's user plus system CPU time, all threads.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// meter holds the clocks at the start of a measured part.
type meter struct {
	t0   time.Time
	cpu0 int64
}

func startMeter() meter { return meter{cpu0: cpuNanos(), t0: time.Now()} }

// stop returns the wall time and CPU time since m started.
func (m meter) stop() (time.Duration, int64) { return time.Since(m.t0), cpuNanos() - m.cpu0 }

// checkEvery is how many operations runLoop makes between clock reads.
const checkEvery = 32

// runLoop calls op warm times, then starts the meter and calls op until
// duration has passed (reading the clock every checkEvery calls) or
// limit calls were made. It stops at op's first error.
func runLoop(warm int, duration time.Duration, limit int64, op func() error) (n int64, m meter, err error) {
	for range warm {
		if err := op(); err != nil {
			return 0, startMeter(), err
		}
	}
	m = startMeter()
	end := m.t0.Add(duration)
	for n < limit {
		for range checkEvery {
			if err := op(); err != nil {
				return n, m, err
			}
			n++
		}
		if !time.Now().Before(end) {
			break
		}
	}
	return n, m, nil
}

// concurrent is what runConcurrent measured.
type concurrent struct {
	ops     int64
	elapsed time.Duration
	cpu     int64
	lat     histogram // every measured call's duration, all workers'
}

// runConcurrent runs op on workers goroutines: each calls op warm times,
// then, once every worker is warm, the meter starts and each calls op,
// timing every call, until duration has passed; the meter stops once
// every worker has finished the call it was in. The error is the first
// any op returned (its worker stops there).
func runConcurrent(workers, warm int, duration time.Duration, op func(worker int) error) (*concurrent, error) {
	var (
		total   atomic.Int64
		stop    atomic.Bool
		first   atomic.Pointer[error]
		warmed  sync.WaitGroup
		done    sync.WaitGroup
		start   = make(chan struct{})
		aborted = make(chan struct{})
		lat     = make([]histogram, workers)
	)
	fail := func(err error) { first.CompareAndSwap(nil, &err) }
	for w := range workers {
		warmed.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			for range warm {
				if err := op(w); err != nil {
					fail(err)
					warmed.Done()
					return
				}
			}
			warmed.Done()
			select {
			case <-start:
			case <-aborted:
				return
			}
			h := &lat[w]
			var k int64
			for !stop.Load() {
				t0 := time.Now()
				if err := op(w); err != nil {
					fail(err)
					break
				}
				h.record(time.Since(t0))
				k++
			}
			total.Add(k)
		}()
	}
	warmed.Wait()
	if e := first.Load(); e != nil {
		close(aborted)
		done.Wait()
		return nil, *e
	}
	m := startMeter()
	close(start)
	time.Sleep(duration)
	stop.Store(true)
	done.Wait()
	c := &concurrent{ops: total.Load()}
	c.elapsed, c.cpu = m.stop()
	for i := range lat {
		c.lat.merge(&lat[i])
	}
	if e := first.Load(); e != nil {
		return c, *e
	}
	return c, nil
}

// result is c as a result with its p50 and p99 in Extra.
func (c *concurrent) result() result {
	return result{
		Ops:      c.ops,
		Seconds:  c.elapsed.Seconds(),
		CPUNanos: c.cpu,
		Extra:    c.lat.percentiles(),
	}
}

// histogram counts durations in log-linear buckets: exact below 16 ns,
// then 16 buckets per power of two, so that a quantile is off by at most
// about 3%. Recording is an index computation and an increment. The zero
// value is ready; it is not safe for concurrent use.
type histogram struct {
	counts [61 * 16]uint64
	n      uint64
}

func bucketOf(ns uint64) int {
	if ns < 16 {
		return int(ns)
	}
	shift := bits.Len64(ns) - 5 // ns>>shift is in [16, 32)
	return (shift+1)*16 + int(ns>>shift) - 16
}

// bucketMid is the middle of bucket i, in nanoseconds.
func bucketMid(i int) float64 {
	if i < 16 {
		return float64(i)
	}
	shift := i/16 - 1
	lo := uint64(i%16+16) << shift
	return float64(lo) + float64(uint64(1)<<shift)/2
}

func (h *histogram) record(d time.Duration) {
	ns := uint64(max(d, 0))
	h.counts[bucketOf(ns)]++
	h.n++
}

// quantile returns the q-quantile (0 < q ≤ 1) in nanoseconds, or 0 when
// nothing was recorded.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) || rank == 0 {
		rank++
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return bucketMid(i)
		}
	}
	return bucketMid(len(h.counts) - 1)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// percentiles is the p50 and p99 in microseconds, keyed as in result.Extra.
func (h *histogram) percentiles() map[string]float64 {
	if h.n == 0 {
		return map[string]float64{}
	}
	return map[string]float64{"p50_us": h.quantile(0.5) / 1e3, "p99_us": h.quantile(0.99) / 1e3}
}

// stat is a median with its range.
type stat struct {
	Med float64 `json:"med"`
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// summarize returns the median and range of xs, which must not be empty.
func summarize(xs []float64) stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stat{med, s[0], s[n-1]}
}

// memStats is heapAndStack's, kept off its stack: a MemStats is over 5
// KiB, and the stacks in use at a GC set the size new goroutines start
// with.
var (
	memStatsMu sync.Mutex
	memStats   runtime.MemStats
)

// heapAndStack collects garbage, returns free pages to the OS and reads
// HeapInuse + StackInuse.
func heapAndStack() int64 {
	runtime.GC()
	debug.FreeOSMemory() // another GC, then scavenging
	memStatsMu.Lock()
	defer memStatsMu.Unlock()
	runtime.ReadMemStats(&memStats)
	return int64(memStats.HeapInuse + memStats.StackInuse)
}
