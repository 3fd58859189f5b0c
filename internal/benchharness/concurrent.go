//go:build linux

package benchharness

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Concurrent is what RunConcurrent measured.
type Concurrent struct {
	Ops      int64         // calls of op in the measured part
	Elapsed  time.Duration // wall time of the measured part
	CPUNanos int64         // user+system CPU time of the measured part
	// Latency holds the duration of every measured call, all workers'.
	Latency Histogram
	// Sched is the process's scheduling latencies over the measured part
	// (p50, p99, p99.9, in seconds; SchedSampler).
	Sched []float64
}

// Result is c as a Result, its latency percentiles in Extra: "p50_us",
// "p99_us", "p999_us" of the calls and "sched_p50_us", "sched_p99_us",
// "sched_p999_us" of the scheduler.
func (c *Concurrent) Result() Result {
	r := Result{Ops: c.Ops, Seconds: c.Elapsed.Seconds(), CPUNanos: c.CPUNanos, Extra: map[string]float64{}}
	if c.Latency.Count() > 0 {
		r.Extra["p50_us"] = c.Latency.Quantile(0.5) / 1e3
		r.Extra["p99_us"] = c.Latency.Quantile(0.99) / 1e3
		r.Extra["p999_us"] = c.Latency.Quantile(0.999) / 1e3
	}
	AddSched(&r, c.Sched)
	return r
}

// AddSched puts scheduling latencies (SchedQuantiles, in seconds) in r's
// Extra as "sched_p50_us", "sched_p99_us" and "sched_p999_us".
func AddSched(r *Result, sched []float64) {
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	for i, key := range []string{"sched_p50_us", "sched_p99_us", "sched_p999_us"} {
		if i < len(sched) && !math.IsNaN(sched[i]) {
			r.Extra[key] = sched[i] * 1e6
		}
	}
}

// RunConcurrent runs op on workers goroutines at once: each first calls
// op warm times (opening its connections, growing its stack), then, when
// every worker is warm, the Meter starts and the workers call op until
// duration has passed, timing each call; each finishes the op it is in,
// and the Meter is stopped once they all have (so the tail is in the
// measurement). The error is the first op returned (a worker stops at its
// first).
func RunConcurrent(workers, warm int, duration time.Duration, op func(worker int) error) (*Concurrent, error) {
	var (
		total   atomic.Int64
		stop    atomic.Bool
		first   atomic.Pointer[error]
		warmed  sync.WaitGroup
		done    sync.WaitGroup
		start   = make(chan struct{})
		aborted = make(chan struct{})
		lat     = make([]Histogram, workers)
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
				h.Record(time.Since(t0))
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
	sched := StartSched()
	m := StartMeter()
	close(start)
	time.Sleep(duration)
	stop.Store(true)
	done.Wait()
	c := &Concurrent{Ops: total.Load()}
	c.Elapsed, c.CPUNanos = m.Stop()
	c.Sched = sched.Stop(SchedQuantiles...)
	for i := range lat {
		c.Latency.Merge(&lat[i])
	}
	if e := first.Load(); e != nil {
		return c, *e
	}
	return c, nil
}

// HTTPGet is one keep-alive request of an HTTP load: GET url with client,
// read the body to the end (so the connection is reused) and close it; a
// status other than 200 is an error.
func HTTPGet(client *http.Client, url string) error {
	res, err := client.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", res.Status)
	}
	return err
}
