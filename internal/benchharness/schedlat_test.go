package benchharness

import (
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestHistQuantile(t *testing.T) {
	bounds := []float64{math.Inf(-1), 1, 2, 4, math.Inf(1)}
	counts := []uint64{0, 50, 49, 1}
	for _, c := range []struct{ q, want float64 }{
		{0.01, 2}, {0.5, 2}, {0.51, 4}, {0.99, 4}, {1, 4},
	} {
		if got := histQuantile(counts, bounds, 100, c.q); got != c.want {
			t.Errorf("q %v: %v, want %v", c.q, got, c.want)
		}
	}
}

// TestSchedSampler makes goroutines queue behind each other and checks
// the sampler saw their scheduling latencies.
func TestSchedSampler(t *testing.T) {
	s := StartSched()
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			for range 10 {
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	q := s.Stop(SchedQuantiles...)
	if len(q) != len(SchedQuantiles) {
		t.Fatalf("%d quantiles", len(q))
	}
	for i, v := range q {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Errorf("quantile %v = %v, want a positive latency", SchedQuantiles[i], v)
		}
	}
	if !(q[0] <= q[1] && q[1] <= q[2]) {
		t.Errorf("quantiles out of order: %v", q)
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b Histogram
	for range 100 {
		a.Record(time.Microsecond)
		b.Record(time.Millisecond)
	}
	a.Merge(&b)
	if a.Count() != 200 {
		t.Fatalf("count %d", a.Count())
	}
	if p := a.Quantile(0.25); p > 1100 || p < 900 {
		t.Errorf("p25 %v", p)
	}
	if p := a.Quantile(0.99); p < 900e3 {
		t.Errorf("p99 %v", p)
	}
}
