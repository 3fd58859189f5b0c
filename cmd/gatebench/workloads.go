//go:build linux

package main

// The parent's side of each workload: which children to run, with which
// contenders, and which rows of the table their results make.

import (
	"fmt"
	"os/exec"
	"slices"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// workload is one -workloads name.
type workload struct {
	name string
	run  func(h *benchharness.Harness, rep *report) error
}

var workloads = []workload{
	{"pingpong", runPingPong},
	{"bulk", runBulk},
	{"echo-many", rateP99CPU("echo-many", echoConns, fmt.Sprintf("messages/s (%d conns)", echoConns), "message")},
	{"accept", simple("accept", 0, "connections/s", "CPU µs/connection")},
	{"dial", rateP99CPU("dial", dialClients, fmt.Sprintf("connections/s (%d dialers)", dialClients), "connection")},
	{"http", runHTTP},
	{"tls", simple("tls", tlsClients, fmt.Sprintf("handshakes/s (%d clients)", tlsClients), "CPU µs/handshake")},
	{"pipe", simple("pipe", pingSize, "round trips/s (os.Pipe vs gatenet.Pipe)", "CPU µs/round trip")},
	{"idle", runIdle},
	{"scale", runScale},
}

func workloadName(w workload) string { return w.name }

func workloadNames() []string { return benchharness.Names(workloads, workloadName) }

// selectWorkloads parses -workloads: "all" or a comma list of names.
func selectWorkloads(list string) ([]workload, error) {
	return benchharness.Select(workloads, workloadName, list)
}

func needsCLimit(ws []workload) bool {
	return slices.ContainsFunc(ws, func(w workload) bool { return w.name == "pingpong" || w.name == "bulk" })
}

// The metrics of one round.
func perSec(r result) float64   { return float64(r.Ops) / r.Seconds }
func mbPerSec(r result) float64 { return float64(r.Bytes) / r.Seconds / 1e6 }
func cpuPerOp(r result) float64 { return float64(r.CPUNanos) / float64(r.Ops) / 1e3 }
func cpuPerMB(r result) float64 { return float64(r.CPUNanos) / (float64(r.Bytes) / 1e6) / 1e3 }
func extra(key string) func(result) float64 {
	return func(r result) float64 { return r.Extra[key] }
}

var (
	kilo   = benchharness.Kilo
	fixed0 = benchharness.Fixed(0)
	fixed1 = benchharness.Fixed(1)
	fixed2 = benchharness.Fixed(2)
)

// contenders is net and gatenet, and the C limit when it was built and
// withLimit is set.
func contenders(rep *report, withLimit bool) []string {
	cs := []string{"net", "gatenet"}
	if withLimit && rep.climit {
		cs = append(cs, "c")
	}
	return cs
}

func collect(h *benchharness.Harness, rep *report, name, mode string, size int, cs []string) (map[string][]result, error) {
	res, err := h.CollectFor(mode, size, cs)
	if err != nil {
		return nil, err
	}
	if rep.Results[name] == nil {
		rep.Results[name] = map[string][]result{}
	}
	for c, rs := range res {
		rep.Results[name][c] = append(rep.Results[name][c], rs...)
	}
	return res, nil
}

// simple is a workload with a rate and a CPU per operation, net against
// gatenet.
func simple(mode string, size int, rate, cpu string) func(*benchharness.Harness, *report) error {
	return func(h *benchharness.Harness, rep *report) error {
		res, err := collect(h, rep, mode, mode, size, contenders(rep, false))
		if err != nil {
			return err
		}
		rep.add(mode, rate, kilo, false, res["net"], res["gatenet"], nil, perSec)
		rep.add(mode, cpu, fixed2, true, res["net"], res["gatenet"], nil, cpuPerOp)
		return nil
	}
}

func runPingPong(h *benchharness.Harness, rep *report) error {
	res, err := collect(h, rep, "pingpong", "pingpong", pingSize, contenders(rep, true))
	if err != nil {
		return err
	}
	n, g, c := res["net"], res["gatenet"], res["c"]
	rep.add("pingpong", fmt.Sprintf("round trips/s (%d B)", pingSize), kilo, false, n, g, c, perSec)
	rep.add("pingpong", "p50 µs", fixed1, true, n, g, nil, extra("p50_us"))
	rep.add("pingpong", "p99 µs", fixed1, true, n, g, nil, extra("p99_us"))
	rep.add("pingpong", "CPU µs/round trip", fixed2, true, n, g, c, cpuPerOp)
	return nil
}

func runBulk(h *benchharness.Harness, rep *report) error {
	res, err := collect(h, rep, "bulk", "bulk", bulkChunk, contenders(rep, true))
	if err != nil {
		return err
	}
	n, g, c := res["net"], res["gatenet"], res["c"]
	rep.add("bulk", "MB/s (128 KiB writes)", fixed0, false, n, g, c, mbPerSec)
	rep.add("bulk", "CPU µs/MB", fixed0, true, n, g, c, cpuPerMB)
	return nil
}

// rateP99CPU is a workload with a rate, the p99 of an operation and a
// CPU per operation, net against gatenet; unit names one operation.
func rateP99CPU(mode string, size int, rate, unit string) func(*benchharness.Harness, *report) error {
	return func(h *benchharness.Harness, rep *report) error {
		res, err := collect(h, rep, mode, mode, size, contenders(rep, false))
		if err != nil {
			return err
		}
		n, g := res["net"], res["gatenet"]
		rep.add(mode, rate, kilo, false, n, g, nil, perSec)
		rep.add(mode, "p99 µs/"+unit, fixed0, true, n, g, nil, extra("p99_us"))
		rep.add(mode, "CPU µs/"+unit, fixed2, true, n, g, nil, cpuPerOp)
		return nil
	}
}

// latencyRows adds the p50, p99 and p99.9 of a request and the process's
// scheduling latencies.
func latencyRows(rep *report, name, who string, n, g []result) {
	rep.add(name, "p50 µs", fixed0, true, n, g, nil, extra("p50_us"))
	rep.add(name, "p99 µs", fixed0, true, n, g, nil, extra("p99_us"))
	rep.add(name, "p99.9 µs", fixed0, true, n, g, nil, extra("p999_us"))
	rep.add(name, who+" scheduling latency p99 µs", fixed0, true, n, g, nil, extra("sched_p99_us"))
	rep.add(name, who+" scheduling latency p99.9 µs", fixed0, true, n, g, nil, extra("sched_p999_us"))
}

func runHTTP(h *benchharness.Harness, rep *report) error {
	res, err := collect(h, rep, "http", "http", httpClients, contenders(rep, false))
	if err != nil {
		return err
	}
	n, g := res["net"], res["gatenet"]
	rep.add("http", fmt.Sprintf("requests/s (%d clients, keep-alive)", httpClients), kilo, false, n, g, nil, perSec)
	latencyRows(rep, "http", "process", n, g)
	rep.add("http", "CPU µs/request", fixed2, true, n, g, nil, cpuPerOp)
	if _, err := exec.LookPath("wrk"); err != nil {
		rep.Notes = append(rep.Notes, "no wrk rows: wrk is not on PATH")
		return nil
	}
	for _, conns := range []int{httpClients, wrkManyConn} {
		name := fmt.Sprintf("wrk -c%d", conns)
		res, err := collect(h, rep, name, "wrk", conns, contenders(rep, false))
		if err != nil {
			return err
		}
		n, g := res["net"], res["gatenet"]
		rep.add(name, fmt.Sprintf("requests/s (wrk -t%d -c%d)", wrkThreads, conns), kilo, false, n, g, nil, perSec)
		latencyRows(rep, name, "server", n, g)
		rep.add(name, "server CPU µs/request", fixed2, true, n, g, nil, cpuPerOp)
	}
	return nil
}

func runIdle(h *benchharness.Harness, rep *report) error {
	peek, read4k := "net+"+benchharness.IdlePeek, "net+"+benchharness.IdleRead4K
	wait, queue := "gatenet+"+benchharness.IdleWaitRead, "gatenet+"+benchharness.IdleQueue
	waitCtx := "gatenet+" + benchharness.IdleWaitReadCtx
	res, err := collect(h, rep, "idle", "idle", idleFlag, []string{peek, wait, read4k, queue, waitCtx})
	if err != nil {
		return err
	}
	b := extra("bytes_per_conn")
	rep.add("idle", "B/conn: net MSG_PEEK goroutine vs gatenet WaitRead", fixed0, true, res[peek], res[wait], nil, b)
	rep.add("idle", "B/conn: net MSG_PEEK goroutine vs gatenet WaitRead(server ctx)", fixed0, true, res[peek], res[waitCtx], nil, b)
	rep.add("idle", "B/conn: net MSG_PEEK goroutine vs gatenet ReadyQueue", fixed0, true, res[peek], res[queue], nil, b)
	rep.add("idle", "B/conn: net Read(4 KiB) goroutine vs gatenet WaitRead", fixed0, true, res[read4k], res[wait], nil, b)
	return nil
}

func runScale(h *benchharness.Harness, rep *report) error {
	res, err := collect(h, rep, "scale", "scale", idleFlag, []string{"net", "gatenet", "net+idle", "gatenet+idle"})
	if err != nil {
		return err
	}
	rep.add("scale", "round trips/s, no idle conns", kilo, false, res["net"], res["gatenet"], nil, perSec)
	rep.add("scale", fmt.Sprintf("round trips/s, %d idle conns", idleFlag), kilo, false, res["net+idle"], res["gatenet+idle"], nil, perSec)
	// The two rounds a contender ran back to back, with idle conns and
	// without, make one ratio each.
	ratios := func(with, without []result) []float64 {
		var out []float64
		for i := range min(len(with), len(without)) {
			out = append(out, perSec(with[i])/perSec(without[i]))
		}
		return out
	}
	rep.addValues("scale", fmt.Sprintf("%d idle ÷ none, per round", idleFlag), fixed2, false,
		ratios(res["net+idle"], res["net"]), ratios(res["gatenet+idle"], res["gatenet"]), nil, poller(res["gatenet"]))
	return nil
}
