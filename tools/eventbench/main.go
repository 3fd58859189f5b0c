//go:build linux

// Command eventbench serves one echo protocol with three event-driven
// servers — gnet v2, nbio, and a gatenet ReadyQueue with two workers —
// each in its own documented idiom, drives each with the standard
// library's net clients only (so that only the server differs), and
// prints a markdown table of the ratios ReadyQueue/gnet and
// ReadyQueue/nbio: per round, their medians and ranges.
//
// Every round of every workload runs in a fresh child process (this
// binary re-executed with -child), server and clients together, except
// idle, whose child holds only the server and whose clients are in the
// parent, and bulk-apart, whose server and clients are in two children.
// Rounds are interleaved: round 1 runs gnet, nbio, readyqueue, then
// round 2 does, and so on.
//
// Workloads (-workloads picks some; all over 127.0.0.1):
//
//   - pingpong: 64-byte echo on one connection; round trips/s, p50, p99.
//   - echo-many: 64-byte echo on 1,000 connections at once, a client
//     goroutine each; messages/s, p50, p99.
//   - bulk: 128 KiB writes on one connection, 8 in flight, echoed back;
//     MB/s (10^6 bytes) echoed.
//   - bulk-apart: bulk with the clients in a process of their own; MB/s,
//     and the server's process's CPU and the clients' per MB, apart.
//   - accept: 4 dialers, each: dial, write 1 byte, read it back, close;
//     connections/s, p50, p99.
//   - idle: HeapInuse+StackInuse (after a GC) per connection the server
//     holds, 10,000 idle connections.
//
// The throughput workloads also report the process's CPU time (server
// and clients) per operation; bulk-apart the server's and the clients'
// apart.
//
// The one command (README.md):
//
//	cd tools/eventbench && go run . -rounds 5
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// config is what the flags set.
type config struct {
	rounds    int
	duration  time.Duration
	workloads string
	jsonFile  string
	conns     int // echo-many
	idle      int // idle
	child     string
	server    string
	profile   string // -child only: a CPU profile of the round
	trace     string // -child only: an execution trace of the round
	readBuf   int    // every server's read buffer
	connect   string // -child bulk-apart only: be the clients, of the server at this address
	cc        string // -congestion
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "eventbench: %v\n", err)
		os.Exit(1)
	}
}

// run is the command with its arguments: the parent, or with -child one
// round.
func run(args []string, stdout, stderr io.Writer, stdin io.Reader) error {
	fs := flag.NewFlagSet("eventbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.rounds, "rounds", 5, "interleaved rounds per server")
	fs.DurationVar(&cfg.duration, "duration", 3*time.Second, "measured time of one round of each throughput workload")
	fs.StringVar(&cfg.workloads, "workloads", "all", "comma-separated workloads, or all: "+strings.Join(workloadNames(), ","))
	fs.StringVar(&cfg.jsonFile, "json", "", "also write every round and the summary to this file as JSON")
	fs.IntVar(&cfg.conns, "conns", echoConns, "echo-many's connections")
	fs.IntVar(&cfg.idle, "idle", idleConns, "idle's connections")
	fs.IntVar(&cfg.readBuf, "readbuf", defaultReadBuf, "every server's read buffer, in bytes: gnet's per event loop, nbio's per poller, the ReadyQueue's per worker")
	fs.StringVar(&cfg.cc, "congestion", "", "TCP congestion control for every socket, the clients' and the servers' (e.g. cubic, bbr); empty: the kernel's default")
	fs.StringVar(&cfg.child, "child", "", "internal: run one round of this workload in this process")
	fs.StringVar(&cfg.server, "server", "", "internal: the child's server ("+strings.Join(serverNames, ", ")+")")
	fs.StringVar(&cfg.connect, "connect", "", "internal: with -child bulk-apart, run its clients against this address")
	fs.StringVar(&cfg.profile, "cpuprofile", "", "with -child: write the round's CPU profile (server and clients) to this file")
	fs.StringVar(&cfg.trace, "trace", "", "with -child: write the round's execution trace (go tool trace) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.rounds < 1 || cfg.duration <= 0 || cfg.conns < 1 || cfg.idle < 1 || cfg.readBuf < 1 {
		return errors.New("-rounds, -duration, -conns, -idle and -readbuf must be positive")
	}
	if err := checkCongestion(cfg.cc); err != nil {
		return err
	}
	congestion = cfg.cc
	if cfg.child != "" {
		return runChild(cfg, stdout, stdin)
	}
	return runParent(cfg, stdout, stderr)
}

func workloadName(w workload) string { return w.name }

func workloadNames() []string { return benchharness.Names(workloads, workloadName) }

// selectWorkloads parses -workloads: "all" or a comma list of names.
func selectWorkloads(list string) ([]workload, error) {
	return benchharness.Select(workloads, workloadName, list)
}

// ---- child ----

const resultPrefix = "RESULT "

func writeResult(w io.Writer, r result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s%s\n", resultPrefix, b)
	return err
}

// readResult reads lines up to the child's result.
func readResult(lines *bufio.Scanner) (result, error) {
	for lines.Scan() {
		if b, ok := strings.CutPrefix(lines.Text(), resultPrefix); ok {
			var r result
			err := json.Unmarshal([]byte(b), &r)
			return r, err
		}
	}
	return result{}, fmt.Errorf("no result from the child (%v)", lines.Err())
}

// runChild runs one round: cfg.child against cfg.server.
func runChild(cfg config, stdout io.Writer, stdin io.Reader) error {
	limit := 20*cfg.duration + 3*time.Minute
	watchdog := time.AfterFunc(limit, func() {
		fmt.Fprintf(os.Stderr, "eventbench child %s %s: still running after %v\n", cfg.child, cfg.server, limit)
		os.Exit(3)
	})
	defer watchdog.Stop()
	if cfg.connect != "" { // bulk-apart's clients, no server here
		if cfg.child != "bulk-apart" {
			return fmt.Errorf("-connect is for -child bulk-apart, not %q", cfg.child)
		}
		r, err := bulkApartClients(cfg.connect, cfg.duration, stdout, stdin)
		if err != nil {
			return err
		}
		r.Workload, r.Server = cfg.child, cfg.server
		return writeResult(stdout, r)
	}
	s, err := startServer(cfg.server, cfg.readBuf)
	if err != nil {
		return err
	}
	stopProfile, err := record(cfg.profile, pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return errors.Join(err, s.Close())
	}
	defer stopProfile()
	stopTrace, err := record(cfg.trace, trace.Start, trace.Stop)
	if err != nil {
		return errors.Join(err, s.Close())
	}
	defer stopTrace()
	var r result
	switch cfg.child {
	case "pingpong":
		r, err = pingpong(s, cfg.duration)
	case "echo-many":
		r, err = echoMany(s, cfg.conns, cfg.duration)
	case "bulk":
		r, err = bulk(s, cfg.duration)
	case "accept":
		r, err = accept(s, dialers, cfg.duration)
	case "bulk-apart":
		r, err = bulkApartServer(s, stdout, stdin)
	case "idle":
		r, err = idleChild(s, cfg.idle, stdout, stdin)
	default:
		err = fmt.Errorf("unknown workload %q", cfg.child)
	}
	if err = errors.Join(err, s.Close()); err != nil {
		return err
	}
	if cfg.child == "idle" || cfg.child == "bulk-apart" {
		return nil // reported already
	}
	r.Workload, r.Server = cfg.child, cfg.server
	return writeResult(stdout, r)
}

// record starts one of the child's recordings of its round (a CPU
// profile, an execution trace) into the file path names, if any, and
// returns what stops it.
func record(path string, start func(io.Writer) error, stop func()) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return func() { stop(); f.Close() }, nil
}

// ---- parent ----

// child is a child process started by the parent, with its standard
// input, its standard output line by line, and its standard error kept.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	lines  *bufio.Scanner
	stderr *strings.Builder
}

// childArgs is the command line of a child running one round of w
// against srv.
func childArgs(cfg config, w, srv string) []string {
	return []string{"-child", w, "-server", srv, "-duration", cfg.duration.String(),
		"-conns", fmt.Sprint(cfg.conns), "-idle", fmt.Sprint(cfg.idle), "-readbuf", fmt.Sprint(cfg.readBuf),
		"-congestion", cfg.cc}
}

// startChild starts exe with args, killed when ctx is done.
func startChild(ctx context.Context, exe string, args ...string) (*child, error) {
	c := &child{cmd: exec.CommandContext(ctx, exe, args...), stderr: new(strings.Builder)}
	c.cmd.Stderr = c.stderr
	var err error
	if c.stdout, err = c.cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, err
	}
	c.lines = bufio.NewScanner(c.stdout)
	return c, nil
}

// expect reads the child's next line (lineReader.expect).
func (c *child) expect(word string) (string, error) { return lineReader{c.lines}.expect(word) }

// wait closes the child's standard input, kills it if err (what went
// wrong talking to it) is not nil, reads the rest of its output, and
// waits for it to exit. It returns err joined with how the child ended,
// and the child's standard error if either is not nil.
func (c *child) wait(err error) error {
	c.stdin.Close()
	if err != nil {
		c.cmd.Process.Kill()
	}
	io.Copy(io.Discard, c.stdout)
	if werr := c.cmd.Wait(); werr != nil || err != nil {
		return fmt.Errorf("%v: %s", errors.Join(err, werr), strings.TrimSpace(c.stderr.String()))
	}
	return nil
}

// runRound runs one round of w against srv in a child process (two for
// bulk-apart).
func runRound(cfg config, exe string, w, srv string) (result, error) {
	var (
		r   result
		err error
	)
	if w == "bulk-apart" {
		r, err = runApart(cfg, exe, srv)
	} else {
		r, err = runOne(cfg, exe, w, srv)
	}
	if err != nil {
		return result{}, err
	}
	r.Workload, r.Server = w, srv
	if r.Ops <= 0 || r.Seconds <= 0 {
		return result{}, fmt.Errorf("%s %s measured nothing: %+v", w, srv, r)
	}
	return r, nil
}

// runOne runs one round of w against srv in one child process.
func runOne(cfg config, exe string, w, srv string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*cfg.duration+4*time.Minute)
	defer cancel()
	c, err := startChild(ctx, exe, childArgs(cfg, w, srv)...)
	if err != nil {
		return result{}, err
	}
	var r result
	if w == "idle" {
		r, err = idleParent(c.lines, cfg.idle)
	} else {
		r, err = readResult(c.lines)
	}
	if err = c.wait(err); err != nil { // the idle child waits for its stdin to close
		return result{}, fmt.Errorf("%s %s: %w", w, srv, err)
	}
	return r, nil
}

func runParent(cfg config, stdout, stderr io.Writer) error {
	selected, err := selectWorkloads(cfg.workloads)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(selected, func(w workload) bool { return w.name == "idle" }) {
		if err := idleLimit(cfg.idle); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	t0 := time.Now()
	rep := &report{
		Command:  "eventbench " + strings.Join(os.Args[1:], " "),
		Machine:  benchharness.Machine(),
		LoadAvg:  []string{benchharness.LoadAvg()},
		Rounds:   cfg.rounds,
		Duration: cfg.duration.String(),
		ReadBuf:  cfg.readBuf,
		TCPCC:    congestionInUse(),
		Servers:  serverNames,
	}
	fmt.Fprintf(stdout, "# eventbench: a gatenet ReadyQueue echo server against gnet and nbio\n\n")
	fmt.Fprintf(stdout, "%s. Load average at the start: %s.\n", rep.Machine, rep.LoadAvg[0])
	fmt.Fprintf(stdout, "%d interleaved round(s) (%s), each in a fresh process; %v measured per round of each throughput workload; read buffers of %d bytes; TCP congestion control %s.\n",
		cfg.rounds, strings.Join(serverNames, ", "), cfg.duration, cfg.readBuf, rep.TCPCC)
	for _, w := range selected {
		byServer := map[string][]result{}
		for round := 1; round <= cfg.rounds; round++ {
			for _, srv := range serverNames {
				r, err := runRound(cfg, exe, w.name, srv)
				if err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				r.Round = round
				byServer[srv] = append(byServer[srv], r)
				rep.Results = append(rep.Results, r)
				m := w.metrics[0]
				fmt.Fprintf(stderr, "eventbench: %s round %d/%d %-10s %s %s\n",
					w.name, round, cfg.rounds, srv, m.format(m.value(r)), m.name)
			}
		}
		for _, m := range w.metrics {
			rep.addRow(w, m, byServer)
		}
	}
	rep.LoadAvg = append(rep.LoadAvg, benchharness.LoadAvg())
	rep.Elapsed = time.Since(t0).Round(time.Second).String()
	rep.print(stdout)
	if cfg.jsonFile != "" {
		return rep.writeJSON(cfg.jsonFile)
	}
	return nil
}
