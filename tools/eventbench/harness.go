//go:build linux

package main

// The measuring machinery: a round's result, timed loops for one or many
// clients (benchharness's for many), medians with ranges, and the memory
// snapshot of the idle workload.

import (
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// result is one round: one workload against one server, measured in a
// child process of its own. The child prints it as JSON.
type result struct {
	Workload string  `json:"workload"`
	Server   string  `json:"server"`
	Round    int     `json:"round,omitempty"`
	Ops      int64   `json:"ops"`   // round trips, messages, connections, or held conns (idle)
	Bytes    int64   `json:"bytes"` // bytes echoed back to the clients
	Seconds  float64 `json:"secs"`  // wall time of the measured part
	// CPUNanos is the process's user+system CPU in the measured part
	// (clients and server); bulk-apart's is the server's process's alone,
	// scaled to the clients' measured part.
	CPUNanos int64 `json:"cpu_ns"`
	// Extra holds the workload's further figures: "p50_us", "p99_us"
	// (latency of one operation), "bytes_per_conn" (idle), and
	// bulk-apart's "client_cpu_ns" (the clients' process's CPU),
	// "server_cpu_ns" over "server_secs" (the server's, as measured),
	// "server_pid" and "client_pid".
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

// fromConcurrent is what benchharness.RunConcurrent measured as a result,
// with its p50 and p99 in Extra.
func fromConcurrent(c *benchharness.Concurrent) result {
	return result{Ops: c.Ops, Seconds: c.Elapsed.Seconds(), CPUNanos: c.CPUNanos, Extra: percentiles(&c.Latency)}
}

// percentiles is h's p50 and p99 in microseconds, keyed as in result.Extra.
func percentiles(h *benchharness.Histogram) map[string]float64 {
	if h.Count() == 0 {
		return map[string]float64{}
	}
	return map[string]float64{"p50_us": h.Quantile(0.5) / 1e3, "p99_us": h.Quantile(0.99) / 1e3}
}

// stat is a median with its range (benchharness's, as gatebench's).
type stat = benchharness.Stat

// summarize returns the median and range of xs, which must not be empty.
var summarize = benchharness.Summarize

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
