package benchharness

import (
	"math"
	"runtime/metrics"
)

// schedLatencies is the runtime's histogram of how long goroutines sat
// runnable before they ran: the queueing a server's requests feel on top
// of their own work.
const schedLatencies = "/sched/latencies:seconds"

// SchedQuantiles are the quantiles Concurrent.Sched and AddSched hold.
var SchedQuantiles = []float64{0.5, 0.99, 0.999}

// SchedSampler measures the scheduling latencies of this process over an
// interval: Start takes the runtime's cumulative histogram, Stop the
// difference since.
type SchedSampler struct {
	sample []metrics.Sample
	start  metrics.Float64Histogram
}

// StartSched begins an interval.
func StartSched() *SchedSampler {
	s := &SchedSampler{sample: []metrics.Sample{{Name: schedLatencies}}}
	metrics.Read(s.sample)
	if h := s.hist(); h != nil {
		s.start = metrics.Float64Histogram{Counts: append([]uint64(nil), h.Counts...), Buckets: h.Buckets}
	}
	return s
}

func (s *SchedSampler) hist() *metrics.Float64Histogram {
	if s.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil // not in this runtime
	}
	return s.sample[0].Value.Float64Histogram()
}

// Stop returns the q-quantiles, in seconds, of the scheduling latencies
// recorded since Start (NaN where nothing was recorded).
func (s *SchedSampler) Stop(qs ...float64) []float64 {
	out := make([]float64, len(qs))
	for i := range out {
		out[i] = math.NaN()
	}
	metrics.Read(s.sample)
	h := s.hist()
	if h == nil || len(h.Counts) != len(s.start.Counts) {
		return out
	}
	delta := make([]uint64, len(h.Counts))
	var total uint64
	for i, c := range h.Counts {
		delta[i] = c - s.start.Counts[i]
		total += delta[i]
	}
	if total == 0 {
		return out
	}
	for i, q := range qs {
		out[i] = histQuantile(delta, h.Buckets, total, q)
	}
	return out
}

// histQuantile is the q-quantile of a runtime/metrics histogram: the upper
// boundary of the bucket that holds it (its lower one for the last,
// unbounded bucket).
func histQuantile(counts []uint64, bounds []float64, total uint64, q float64) float64 {
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			if math.IsInf(bounds[i+1], 1) {
				return bounds[i]
			}
			return bounds[i+1]
		}
	}
	return bounds[len(bounds)-2]
}
