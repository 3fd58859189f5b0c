//go:build linux

// Command quicbench moves bytes over one quic-go stream on loopback,
// client and server in one process, once over the standard library's
// *net.UDPConn and once over gatenet's *UDPConn, and prints markdown
// tables of throughput, CPU and system calls per MB for each, with the
// ratios gatenet/net round by round (issue 42).
//
// Every round runs in a fresh child process (this binary re-executed with
// -child), and the rounds are interleaved: round 1 runs net, then
// gatenet, then round 2 does, and so on. Before them, one short untimed
// child per socket kind runs with quic-go's debug log on
// (QUIC_GO_LOG_LEVEL=debug), to report what quic-go says about its UDP
// optimisations on each side.
//
// The one command (README.md):
//
//	cd tools/quicbench && go run . -rounds 5
//
// Its last line is "quic-go bulk gatenet/net R": R the median of the
// per-round throughput ratios.
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
	"strings"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// config is what the flags set.
type config struct {
	rounds   int
	size     int64
	jsonFile string
	probe    int64 // bytes moved by the debug-log child of each kind; 0: none
	perf     bool  // run each timed child under perf stat
	child    string
	profile  string // -child only: a CPU profile of the round
}

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "quicbench: %v\n", err)
		os.Exit(1)
	}
}

// run is the command with its arguments: the parent, or with -child one
// round.
func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quicbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.IntVar(&cfg.rounds, "rounds", 5, "interleaved rounds per socket kind")
	fs.Int64Var(&cfg.size, "size", 1<<30, "bytes the client writes on the stream per round")
	fs.StringVar(&cfg.jsonFile, "json", "", "also write every round and the summary to this file as JSON")
	fs.Int64Var(&cfg.probe, "probe", 2<<20, "bytes moved by the untimed child per socket kind that runs with quic-go's debug log; 0: none")
	fs.BoolVar(&cfg.perf, "perf", false, "also count each timed child's system calls in the kernel with perf stat (whole child, all threads)")
	fs.StringVar(&cfg.child, "child", "", "internal: run one round over this socket kind ("+strings.Join(connNames, ", ")+") in this process")
	fs.StringVar(&cfg.profile, "cpuprofile", "", "with -child: write the round's CPU profile (server and client) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.rounds < 1 || cfg.size < minSize || cfg.probe < 0 {
		return fmt.Errorf("-rounds must be positive, -size at least %d, -probe not negative", minSize)
	}
	if cfg.child != "" {
		return runChild(cfg, stdout, stderr)
	}
	if cfg.profile != "" {
		return errors.New("-cpuprofile goes with -child")
	}
	return runParent(cfg, stdout, stderr)
}

// limit is how long one round of size bytes may take: 3 minutes and 5
// MB/s (the race detector's speed on a busy machine is above 10).
func limit(size int64) time.Duration {
	return 3*time.Minute + time.Duration(size/5e6)*time.Second
}

// ---- child ----

const resultPrefix = "RESULT "

// runChild runs one round over the socket kind cfg.child.
func runChild(cfg config, stdout, stderr io.Writer) error {
	lim := limit(cfg.size)
	watchdog := time.AfterFunc(lim+30*time.Second, func() {
		fmt.Fprintf(os.Stderr, "quicbench child %s: still running after %v\n", cfg.child, lim+30*time.Second)
		os.Exit(3)
	})
	defer watchdog.Stop()
	if cfg.profile != "" {
		f, err := os.Create(cfg.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	r, err := bulk(cfg.child, cfg.size, lim, stderr)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.child, err)
	}
	r.Conn = cfg.child
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s%s\n", resultPrefix, b)
	return err
}

// ---- parent ----

// runChildProcess runs one child over the socket kind and returns its
// result and what it wrote on stderr; under perf stat counting
// perfEvents if there are any.
func runChildProcess(exe, kind string, size int64, env, perfEvents []string) (result, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), limit(size)+time.Minute)
	defer cancel()
	args := []string{exe, "-child", kind, "-size", fmt.Sprint(size)}
	var perfOut string
	if len(perfEvents) > 0 {
		var cleanup func()
		var err error
		if perfOut, cleanup, err = perfTemp(); err != nil {
			return result{}, "", err
		}
		defer cleanup()
		args = perfCommand(perfEvents, perfOut, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{}, "", err
	}
	if err := cmd.Start(); err != nil {
		return result{}, "", err
	}
	var r result
	err = errors.New("no result from the child")
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		if b, ok := strings.CutPrefix(lines.Text(), resultPrefix); ok {
			err = json.Unmarshal([]byte(b), &r)
			break
		}
	}
	io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if err := errors.Join(err, werr); err != nil {
		return result{}, stderr.String(), fmt.Errorf("%s: %v: %s", kind, err, lastLines(stderr.String(), 20))
	}
	if r.Bytes <= 0 || r.Seconds <= 0 {
		return result{}, stderr.String(), fmt.Errorf("%s measured nothing: %+v", kind, r)
	}
	r.Conn = kind
	if perfOut != "" {
		if r.Perf, err = readPerf(perfOut); err != nil {
			return result{}, stderr.String(), fmt.Errorf("%s: %w", kind, err)
		}
	}
	return r, stderr.String(), nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

func runParent(cfg config, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	t0 := time.Now()
	rep := &report{
		Command: "quicbench " + strings.Join(os.Args[1:], " "),
		Machine: benchharness.Machine(),
		LoadAvg: []string{benchharness.LoadAvg()},
		Rounds:  cfg.rounds,
		Size:    cfg.size,
		Warm:    warmFor(cfg.size),
		Conns:   connNames,
		Probe:   map[string]probeLog{},
		Stderr:  map[string][]string{},
	}
	fmt.Fprintf(stdout, "# quicbench: quic-go bulk transfer over net's and gatenet's UDP sockets\n\n")
	fmt.Fprintf(stdout, "%s. Load average at the start: %s.\n", rep.Machine, rep.LoadAvg[0])
	fmt.Fprintf(stdout, "%d interleaved round(s) (%s), each in a fresh process: %s over one quic-go stream on 127.0.0.1, server and client in the process, the first %s not measured.\n",
		cfg.rounds, strings.Join(connNames, ", "), mib(cfg.size), mib(rep.Warm))

	var events []string
	if cfg.perf {
		if events, err = perfEvents(); err != nil {
			return err
		}
		rep.PerfEvents = events
	}
	if cfg.probe > 0 {
		rep.ProbeSize = max(cfg.probe, minSize)
		for _, kind := range connNames {
			_, log, err := runChildProcess(exe, kind, rep.ProbeSize, []string{"QUIC_GO_LOG_LEVEL=debug"}, nil)
			if err != nil {
				return fmt.Errorf("debug-log child: %w", err)
			}
			rep.Probe[kind] = parseProbe(log)
			fmt.Fprintf(stderr, "quicbench: debug-log child %-7s done\n", kind)
		}
	}

	byConn := map[string][]result{}
	for round := 1; round <= cfg.rounds; round++ {
		for _, kind := range connNames {
			r, log, err := runChildProcess(exe, kind, cfg.size, nil, events)
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			r.Round = round
			byConn[kind] = append(byConn[kind], r)
			rep.Results = append(rep.Results, r)
			if extra := unexpectedLines(log); len(extra) > 0 {
				rep.Stderr[kind] = appendNew(rep.Stderr[kind], extra...)
			}
			fmt.Fprintf(stderr, "quicbench: round %d/%d %-7s %7.1f MB/s %6.2f CPU ms/MB %6.1f syscalls/MB\n",
				round, cfg.rounds, kind, r.mbps(), r.cpuPerMB(), r.syscallsPerMB())
		}
	}
	ms := metrics
	if cfg.perf {
		ms = append(ms[:len(ms):len(ms)], perfMetrics()...)
	}
	for _, m := range ms {
		rep.addRow(m, byConn)
	}
	rep.addOpts(byConn)
	rep.LoadAvg = append(rep.LoadAvg, benchharness.LoadAvg())
	rep.Elapsed = time.Since(t0).Round(time.Second).String()
	if cfg.jsonFile != "" {
		if err := rep.writeJSON(cfg.jsonFile); err != nil {
			return err
		}
	}
	rep.print(stdout)
	return nil
}

// mib writes a byte count in MiB or GiB.
func mib(n int64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%g MiB", float64(n)/(1<<20))
}
