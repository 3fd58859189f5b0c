package benchharness

import (
	"math"
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 {
		t.Fatal("empty histogram has a median")
	}
	// 1 µs … 100 µs, uniformly: the p50 is about 50 µs, the p99 99 µs.
	for i := 1; i <= 100000; i++ {
		h.Record(time.Duration(i) * time.Microsecond / 1000)
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 50e3}, {0.99, 99e3}, {1, 100e3}} {
		got := h.Quantile(c.q)
		if math.Abs(got-c.want)/c.want > 0.04 {
			t.Errorf("Quantile(%v) = %.0f ns, want about %.0f", c.q, got, c.want)
		}
	}
	for ns := uint64(0); ns < 1<<20; ns = ns*3/2 + 1 {
		i := bucketOf(ns)
		if mid := bucketMid(i); math.Abs(mid-float64(ns)) > float64(ns)/16+1 {
			t.Errorf("%d ns: bucket %d, middle %.0f", ns, i, mid)
		}
	}
	h.Record(-time.Second)
	h.Record(time.Duration(math.MaxInt64))
	if h.Count() != 100002 {
		t.Errorf("Count = %d", h.Count())
	}
}
