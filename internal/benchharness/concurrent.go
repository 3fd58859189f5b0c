//go:build linux

package benchharness

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// RunConcurrent runs op on workers goroutines at once: each first calls
// op warm times (opening its connections, growing its stack), then, when
// every worker is warm, the Meter starts and the workers call op until
// duration has passed; each finishes the op it is in, and the Meter is
// stopped once they all have (so the tail is in the measurement). It
// returns the calls made in the measured part and the wall and CPU time;
// the error is the first op returned (a worker stops at its first).
func RunConcurrent(workers, warm int, duration time.Duration, op func(worker int) error) (n int64, elapsed time.Duration, cpuNanos int64, err error) {
	var (
		total   atomic.Int64
		stop    atomic.Bool
		first   atomic.Pointer[error]
		warmed  sync.WaitGroup
		done    sync.WaitGroup
		start   = make(chan struct{})
		aborted = make(chan struct{})
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
			var k int64
			for !stop.Load() {
				if err := op(w); err != nil {
					fail(err)
					break
				}
				k++
			}
			total.Add(k)
		}()
	}
	warmed.Wait()
	if e := first.Load(); e != nil {
		close(aborted)
		done.Wait()
		return 0, 0, 0, *e
	}
	m := StartMeter()
	close(start)
	time.Sleep(duration)
	stop.Store(true)
	done.Wait()
	elapsed, cpuNanos = m.Stop()
	if e := first.Load(); e != nil {
		err = *e
	}
	return total.Load(), elapsed, cpuNanos, err
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
