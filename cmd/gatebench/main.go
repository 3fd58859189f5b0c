//go:build linux

// Command gatebench runs every workload of the performance issue on the
// standard library and on gatenet side by side and prints one markdown
// table of the ratios gatenet/net, plus JSON of every round.
//
// Each measurement round runs in a fresh child process (this binary
// re-executed with the hidden -child flag), and the contenders alternate
// within a round (net, gatenet, net, gatenet, …) so that drift in the
// machine's load spreads over both. gatenet runs on its default poller;
// GATENET_POLLER and GATENET_SHARDS in the environment reach the children
// and choose it as usual. The machinery is internal/benchharness, shared
// with cmd/sockbench and cmd/pipebench.
//
// Workloads (-workloads picks a comma-separated subset; all over
// 127.0.0.1 with both ends from the same library unless said otherwise):
//
//   - pingpong: one TCP connection, 64-byte echo; round trips/s, the p50
//     and p99 of every round trip's time (a log-linear histogram), and CPU
//     per round trip (getrusage(RUSAGE_SELF), user + system, all threads).
//   - bulk: one TCP connection, 128 KiB writes to a reader that discards
//     them; MB/s (10^6 bytes) and CPU per MB.
//   - echo-many: 1,000 connections, a client goroutine per connection
//     doing 64-byte ping-pong and a server goroutine per connection
//     echoing; messages (round trips) per second and the p99 of a round
//     trip.
//   - accept: dial, accept + close, read EOF, close; connections/s.
//   - dial: the same from 4 client goroutines at once, one acceptor;
//     connections/s and the p99 of one.
//   - http: a net/http keep-alive server on the contender's listener and
//     64 client goroutines whose Transport dials with the same contender;
//     requests/s, the p50, p99 and p99.9 of a request, and the process's
//     scheduling latencies (runtime/metrics /sched/latencies:seconds).
//     With wrk on PATH also "wrk": the child serves and runs wrk -t2 with
//     64 and with 1,000 connections in another process (wrk's rate and
//     latencies; the CPU and scheduling latencies are the server
//     process's only).
//   - tls: TLS 1.3 handshakes (ECDSA P-256, X25519, no resumption) from 4
//     concurrent clients, each dial + handshake + 1 byte + close.
//   - pipe: 64-byte ping-pong through two pipes, gatenet.Pipe against
//     os.Pipe (the "net" column).
//   - idle: bytes (HeapInuse + StackInuse, after a GC) per idle server
//     connection, 5,000 of them: net holding each with a goroutine in
//     SyscallConn().Read with a MSG_PEEK probe (its best buffer-less way)
//     and with a goroutine in Read with a 4 KiB buffer; gatenet with a
//     goroutine in WaitRead and with one ReadyQueue.
//   - scale: ping-pong as above with 5,000 idle connected pairs of the
//     same library open (10,000 registered descriptors), and with none.
//
// With -procs 2,4,8,16 every workload runs once per value, its children
// at that GOMAXPROCS (net's and gatenet's alike), a table per value, then
// "Cores": each ratio per value side by side (procs.go).
//
// Under each table, gatenet's delivery: how much of one core its busiest
// drain loop needed and what share of the wake-ups it delivered
// (benchharness.DrainShares), the serial point that sharding removes
// (docs/DESIGN.md, "How delivery scales with the cores").
//
// The "limit" column is a C program (climit.c, compiled with cc -O2 when a
// compiler is found) doing the same ping-pong and bulk over loopback TCP
// with both ends in one thread around one epoll instance: no thread or
// process switch per message, the floor of what any Go poller can do.
//
//	go run ./cmd/gatebench -rounds 5 -duration 1s -json gatebench.json
//	go run ./cmd/gatebench -rounds 3 -procs 2,4,8,16 -workloads echo-many,pingpong
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/benchharness"
)

type result = benchharness.Result

// Sizes of the workloads, as the issue gives them.
const (
	pingSize    = 64
	bulkChunk   = 128 << 10
	echoConns   = 1000
	httpClients = 64
	wrkManyConn = 1000
	dialClients = 4
	tlsClients  = 4
	idleConns   = 5000
)

var (
	workloadsFlag = "all"
	jsonFlag      = ""
	idleFlag      = idleConns
	procsFlag     = ""
)

func main() {
	benchharness.Main(benchharness.Command{
		Name:       "gatebench",
		Baseline:   "net",
		Contenders: []string{"net", "gatenet"},
		Modes:      childModes(),
		Parent:     runParent,
		Child:      runChild,
		Flags: func() {
			flag.StringVar(&workloadsFlag, "workloads", workloadsFlag,
				"comma-separated workloads to run, or all: "+strings.Join(workloadNames(), ","))
			flag.StringVar(&jsonFlag, "json", jsonFlag, "also write every round and the medians to this file as JSON")
			flag.IntVar(&idleFlag, "idle", idleFlag, "idle connections for the idle and scale workloads")
			flag.StringVar(&procsFlag, "procs", procsFlag,
				"comma-separated GOMAXPROCS values: every workload at each, a table per value and the ratios side by side")
		},
	})
}

// childModes are the -child modes runChild knows.
func childModes() []string {
	return []string{"pingpong", "bulk", "echo-many", "accept", "dial", "http", "wrk", "tls", "pipe", "idle", "scale"}
}

// runChild runs one round. kind is "net", "gatenet", "c" (the C limit) or,
// for idle and scale, one of those with a variant after a "+"; size is
// the workload's parameter (message size, write size, connections,
// clients).
func runChild(mode, kind string, size int, duration time.Duration) (result, error) {
	// A hang detector: a wedged child would stall the whole run.
	watchdog := time.AfterFunc(20*duration+2*time.Minute, func() {
		fmt.Fprintf(os.Stderr, "gatebench child %s %s: still running after %v\n", mode, kind, 20*duration+2*time.Minute)
		os.Exit(3)
	})
	defer watchdog.Stop()
	if kind == "c" {
		return runCLimit(mode, size, duration)
	}
	base, variant, _ := strings.Cut(kind, "+")
	if mode == "pipe" {
		return benchharness.PipePingPong(base, "net", size, duration)
	}
	s, err := benchharness.StackFor(base)
	if err != nil {
		return result{}, err
	}
	switch mode {
	case "pingpong":
		return benchharness.TCPPingPong(s, size, duration, new(benchharness.Histogram))
	case "bulk":
		return benchharness.TCPBulk(s, size, duration)
	case "echo-many":
		return echoMany(s, size, duration)
	case "accept":
		return benchharness.TCPAccept(s, duration)
	case "dial":
		return dialLoop(s, size, duration)
	case "http":
		return httpLoad(s, size, duration)
	case "wrk":
		return wrkLoad(s, size, duration)
	case "tls":
		return tlsHandshakes(s, size, duration)
	case "idle":
		return idle(s, variant, size)
	case "scale":
		idle := 0
		if variant == "idle" {
			idle = size
		}
		return scalePingPong(s, idle, duration)
	}
	return result{}, fmt.Errorf("unknown -child %q", mode)
}

func runParent(h *benchharness.Harness) error {
	selected, err := selectWorkloads(workloadsFlag)
	if err != nil {
		return err
	}
	if idleFlag < 1 {
		return fmt.Errorf("-idle %d", idleFlag)
	}
	if slices.ContainsFunc(selected, func(w workload) bool { return w.name == "idle" || w.name == "scale" }) {
		// Both ends of every idle conn are in the child: two descriptors each.
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil && lim.Max < uint64(2*idleFlag+256) {
			return fmt.Errorf("-idle %d needs %d descriptors, RLIMIT_NOFILE allows %d: lower -idle", idleFlag, 2*idleFlag+256, lim.Max)
		}
	}
	procs, err := parseProcs(procsFlag)
	if err != nil {
		return err
	}
	var climitNote string
	climit := false
	if needsCLimit(selected) {
		dir, err := os.MkdirTemp("", "gatebench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if path, err := buildCLimit(dir); err != nil {
			climitNote = fmt.Sprintf("no limit column: %v", err)
		} else {
			os.Setenv(climitEnv, path) // the children inherit it
			climit = true
		}
	}
	h.Header("gatenet vs the standard library")
	if procs == nil {
		_, err := runAll(h, selected, 0, climit, climitNote)
		return err
	}
	var reps []*report
	for _, p := range procs {
		rep, err := runAll(h, selected, p, climit, climitNote)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	printCores(os.Stdout, reps)
	return nil
}

// runAll runs every selected workload with the children at GOMAXPROCS
// procs (0: as the parent's environment has it), prints the table and
// writes the JSON (per value of -procs, "-p<procs>" before the extension).
func runAll(h *benchharness.Harness, selected []workload, procs int, climit bool, climitNote string) (*report, error) {
	rep := &report{
		Command:    strings.Join(os.Args, " "),
		Machine:    benchharness.Machine(),
		GOMAXPROCS: procs,
		Rounds:     h.Rounds,
		Duration:   h.Duration.String(),
		Results:    map[string]map[string][]result{},
		climit:     climit,
	}
	if climitNote != "" {
		rep.Notes = append(rep.Notes, climitNote)
	}
	if procs > 0 {
		os.Setenv("GOMAXPROCS", strconv.Itoa(procs)) // the children inherit it
		defer os.Unsetenv("GOMAXPROCS")
		fmt.Printf("\n# GOMAXPROCS %d in every child\n", procs)
	}
	for _, w := range selected {
		if err := w.run(h, rep); err != nil {
			return nil, err
		}
	}
	for _, r := range rep.Rows {
		if r.Poller != "" {
			rep.Poller = r.Poller
			break
		}
	}
	rep.print(os.Stdout)
	if jsonFlag != "" {
		name := jsonFlag
		if procs > 0 {
			ext := filepath.Ext(name)
			name = fmt.Sprintf("%s-p%d%s", strings.TrimSuffix(name, ext), procs, ext)
		}
		if err := rep.writeJSON(name); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "gatebench: wrote %s\n", name)
	}
	return rep, nil
}
