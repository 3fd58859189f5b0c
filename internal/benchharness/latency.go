package benchharness

import (
	"math/bits"
	"time"
)

// Histogram counts durations in log-linear buckets: exact below 16 ns,
// then 16 buckets per power of two (a bucket is at most 1/16 of its
// lower bound wide, so a quantile is off by at most about 3%). Recording
// is an index computation and an increment: cheap enough to time every
// round trip of a ping-pong. The zero value is empty and ready; it is not
// safe for concurrent use.
type Histogram struct {
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

// Record counts d (negative durations count as 0).
func (h *Histogram) Record(d time.Duration) {
	ns := uint64(0)
	if d > 0 {
		ns = uint64(d)
	}
	h.counts[bucketOf(ns)]++
	h.n++
}

// Count is how many durations were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the q-quantile (0 < q ≤ 1) in nanoseconds: the middle
// of the bucket holding it, or 0 when nothing was recorded.
func (h *Histogram) Quantile(q float64) float64 {
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

// Merge adds o's counts to h's.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}
