//go:build linux

// Command sockbench compares gatenet's TCP sockets with net's, under every
// poller strategy, without `go test`.
//
// It is cmd/pipebench's harness (internal/benchharness) applied to loopback
// TCP: each measurement round runs in a fresh child process whose default
// poller is chosen by GATENET_POLLER, and rounds alternate between the
// contenders (net, dedicated, dedicated+harvest, nested, nested+harvest,
// nested+harvest+rpark — the default —, net, …). The parent prints, per
// workload, a markdown table of medians with min–max and the ratio to net,
// then the best strategy per workload.
//
// Workloads, all over 127.0.0.1 with both ends from the same library:
//
//   - pingpong: the child writes 64 bytes on one connection, an echo
//     goroutine on the accepted end reads them and writes them back, the
//     child reads them back; round trips per second and CPU time
//     (getrusage(RUSAGE_SELF), user + system, all threads) per round trip.
//   - bulk: 128 KiB writes streamed to a reader goroutine that discards
//     them; MB/s (10^6 bytes) and CPU per MB.
//   - accept: the child dials, an acceptor goroutine accepts and closes,
//     the child reads EOF and closes; connections per second and CPU per
//     connection.
//
// net's listener is made with MPTCP off (net's default listener is MPTCP
// where the kernel has it, gatenet's never is), so that both sides run
// plain TCP and the comparison is of the I/O wait path alone.
//
//	go run ./cmd/sockbench -rounds 5 -duration 1s
package main

import (
	"fmt"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

const (
	pingSize  = 64
	bulkChunk = 128 << 10
)

type result = benchharness.Result

func main() {
	benchharness.Main(benchharness.Command{
		Name:     "sockbench",
		Baseline: "net",
		Modes:    []string{"pingpong", "bulk", "accept"},
		Parent:   runParent,
		Child:    runChild,
	})
}

// ---- parent ----

// workload is one table: what to run and which metrics to show. The first
// metric is the rate (higher is better), the second the CPU per operation.
type workload struct {
	mode, title string
	size        int
	metrics     [2]benchharness.Metric
}

// perOp and perMB are a round's rate metrics; cpuPerOp and cpuPerMB its
// CPU per operation in µs and per MB in µs.
func perOp(r result) float64    { return float64(r.Ops) / r.Seconds }
func perMB(r result) float64    { return float64(r.Bytes) / r.Seconds / 1e6 }
func cpuPerOp(r result) float64 { return float64(r.CPUNanos) / float64(r.Ops) / 1e3 }
func cpuPerMB(r result) float64 { return float64(r.CPUNanos) / (float64(r.Bytes) / 1e6) / 1e3 }

var workloads = []workload{
	{"pingpong", fmt.Sprintf("Ping-pong, %d-byte messages over one TCP connection", pingSize), pingSize, [2]benchharness.Metric{
		{Header: "round trips/s", Value: perOp, Format: benchharness.Kilo},
		{Header: "CPU µs/round trip", Value: cpuPerOp, Format: benchharness.Fixed(2)},
	}},
	{"bulk", "Bulk, 128 KiB writes through one TCP connection", bulkChunk, [2]benchharness.Metric{
		{Header: "MB/s", Value: perMB, Format: benchharness.Fixed(0)},
		{Header: "CPU µs/MB", Value: cpuPerMB, Format: benchharness.Fixed(0)},
	}},
	{"accept", "Accept, dial + accept + close per connection", 0, [2]benchharness.Metric{
		{Header: "conns/s", Value: perOp, Format: benchharness.Kilo},
		{Header: "CPU µs/conn", Value: cpuPerOp, Format: benchharness.Fixed(2)},
	}},
}

func runParent(h *benchharness.Harness) error {
	h.Header("gatenet TCP vs net TCP (loopback)")
	var best []string
	for _, w := range workloads {
		res, err := h.Collect(w.mode, w.size)
		if err != nil {
			return err
		}
		h.Table(w.title, "sockets", res, w.metrics[:]...)
		best = append(best, bestRow(h, w, res))
	}
	fmt.Printf("\n## Best gatenet strategy per workload (by median)\n\n")
	fmt.Printf("| workload | fastest | vs %s | least CPU per op | vs %s |\n", h.Baseline, h.Baseline)
	fmt.Println("|---|---|---:|---|---:|")
	for _, row := range best {
		fmt.Println(row)
	}
	return nil
}

// bestRow names the gatenet strategy with the highest median rate and the
// one with the lowest median CPU per operation.
func bestRow(h *benchharness.Harness, w workload, res map[string][]result) string {
	rate, cpu := w.metrics[0].Value, w.metrics[1].Value
	baseRate := benchharness.StatOf(res[h.Baseline], rate).Med
	baseCPU := benchharness.StatOf(res[h.Baseline], cpu).Med
	var fast, frugal string
	var fastRate, frugalCPU float64
	for _, c := range h.Contenders {
		if c == h.Baseline {
			continue
		}
		r, u := benchharness.StatOf(res[c], rate).Med, benchharness.StatOf(res[c], cpu).Med
		if fast == "" || r > fastRate {
			fast, fastRate = c, r
		}
		if frugal == "" || u < frugalCPU {
			frugal, frugalCPU = c, u
		}
	}
	return fmt.Sprintf("| %s | %s | %.2f | %s | %.2f |", w.mode, fast, fastRate/baseRate, frugal, frugalCPU/baseCPU)
}

// ---- child ----

// The workloads are internal/benchharness's, shared with cmd/gatebench.
func runChild(mode, kind string, size int, duration time.Duration) (result, error) {
	s, err := benchharness.StackFor(kind)
	if err != nil {
		return result{}, err
	}
	switch mode {
	case "pingpong", "bulk":
		if size < 1 {
			return result{}, fmt.Errorf("-size %d", size)
		}
		if mode == "pingpong" {
			return benchharness.TCPPingPong(s, size, duration, nil)
		}
		return benchharness.TCPBulk(s, size, duration)
	case "accept":
		return benchharness.TCPAccept(s, duration)
	}
	return result{}, fmt.Errorf("unknown -child %q", mode)
}
