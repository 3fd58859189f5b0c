//go:build linux

// Package benchharness is the side-by-side machinery that cmd/pipebench,
// cmd/sockbench and cmd/gatebench share: running each measurement round in
// a fresh child process (with GATENET_POLLER set, or with the command's own
// contenders), alternating the contenders, and printing markdown tables of
// medians with their ranges and ratios to the standard library's baseline.
//
// A command calls Main with a Command. Main parses the common flags
// (-rounds, -duration, the command's own, and the hidden -child, -kind,
// -size) and either runs the parent, which calls Collect (or CollectFor)
// per workload and Table to print, or one child round, whose Result it
// prints on stdout as JSON.
//
// The children's workloads live here too where more than one command or
// benchmark uses them: the loopback TCP ones over a Stack (tcp.go), the
// ping-pong loop, a latency Histogram (latency.go), RunConcurrent and
// HTTPGet for many-client loads (concurrent.go) and HoldIdle, the idle-connection
// memory measurement (idle.go).
package benchharness

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// Result is one child round's measurement; the child prints it on stdout
// as JSON.
type Result struct {
	Kind     string  `json:"kind"`   // the baseline's name or the poller's Options.String()
	Mode     string  `json:"mode"`   // the workload ("pingpong", "bulk", …)
	Size     int     `json:"size"`   // message size (pingpong) or write size (bulk)
	Ops      int64   `json:"ops"`    // round trips, writes, connections, …
	Bytes    int64   `json:"bytes"`  // bytes received by the reader (bulk)
	Seconds  float64 `json:"secs"`   // wall time of the measured part
	CPUNanos int64   `json:"cpu_ns"` // user+system CPU time of the measured part
	// Poller is gatenet's default poller strategy in a child that ran
	// gatenet under a Command with its own Contenders ("" otherwise).
	Poller string `json:"poller,omitempty"`
	// Extra holds a workload's further figures by name (latency
	// percentiles, bytes per connection, …).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Command describes a side-by-side benchmark command.
type Command struct {
	// Name prefixes messages ("pipebench").
	Name string
	// Baseline is the standard library contender's name ("os", "net"):
	// the first contender, the -kind a child gets for it, and the
	// denominator of every ratio.
	Baseline string
	// Modes are the workloads Child knows, for -child's usage text.
	Modes []string
	// Parent runs the comparison: Collect per workload, then Table.
	Parent func(h *Harness) error
	// Child runs one round of mode with the baseline (kind == Baseline) or
	// gatenet on its default poller (kind == "gatenet"). Main fills in the
	// Result's Kind, Mode and Size.
	Child func(mode, kind string, size int, duration time.Duration) (Result, error)
	// Contenders, when set, replaces the default contenders (Baseline and
	// every poller strategy, chosen with GATENET_POLLER): each is passed
	// to the child as -kind verbatim, GATENET_POLLER is left as the
	// parent's environment has it, and the child's Result keeps the kind
	// as its Kind (and gatenet's strategy in Poller when the kind starts
	// with "gatenet"). Harness.CollectFor runs any other list of kinds.
	Contenders []string
	// Flags, when set, is called before the flags are parsed, to define
	// the command's own on flag.CommandLine.
	Flags func()
}

// Main parses the flags and runs c's parent or, with -child, one round.
func Main(c Command) {
	rounds := flag.Int("rounds", 5, "measurement rounds per contender")
	duration := flag.Duration("duration", time.Second, "length of one round")
	child := flag.String("child", "", "internal: run one round in this process ("+orList(c.Modes)+")")
	kind := flag.String("kind", "", "internal: "+c.Baseline+" or gatenet")
	size := flag.Int("size", 1, "internal: message size")
	if c.Flags != nil {
		c.Flags()
	}
	flag.Parse()

	if *child != "" {
		if err := runChild(c, *child, *kind, *size, *duration); err != nil {
			fmt.Fprintf(os.Stderr, "%s child: %v\n", c.Name, err)
			os.Exit(1)
		}
		return
	}
	if *rounds < 1 || *duration <= 0 {
		fmt.Fprintf(os.Stderr, "%s: -rounds must be ≥ 1 and -duration > 0\n", c.Name)
		os.Exit(2)
	}
	h, err := newHarness(c, *rounds, *duration)
	if err == nil {
		err = c.Parent(h)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}

// orList joins "a", "b", "c" as "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// Names is the name of each of ws, in order: a command's workloads for
// its -workloads flag's help.
func Names[W any](ws []W, name func(W) string) []string {
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = name(w)
	}
	return names
}

// Select parses a -workloads flag: "all" (or nothing) is every one of ws,
// anything else a comma-separated list of their names (spaces around a
// name ignored), picked in the list's order. An unknown name is an error
// that lists the known ones.
func Select[W any](ws []W, name func(W) string, list string) ([]W, error) {
	if list == "" || list == "all" {
		return ws, nil
	}
	var out []W
	for n := range strings.SplitSeq(list, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(ws, func(w W) bool { return name(w) == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown workload %q (have %s)", n, strings.Join(Names(ws, name), ", "))
		}
		out = append(out, ws[i])
	}
	return out, nil
}

func runChild(c Command, mode, kind string, size int, duration time.Duration) error {
	onGatenet := strings.HasPrefix(kind, "gatenet")
	var before pollfd.Stats
	var beforeShards []pollfd.Stats
	start := time.Now()
	if onGatenet {
		before, beforeShards = pollfd.Default().Stats(), pollfd.Default().ShardStats()
	}
	r, err := c.Child(mode, kind, size, duration)
	if err != nil {
		return err
	}
	if onGatenet {
		p := pollfd.Default()
		addPollerCounts(&r, before, p.Stats())
		if r.Extra != nil {
			for k, v := range DrainShares(beforeShards, p.ShardStats(), time.Since(start)) {
				r.Extra[k] = v
			}
		}
	}
	r.Kind, r.Mode, r.Size = c.Baseline, mode, size
	switch {
	case c.Contenders != nil:
		r.Kind = kind
		if onGatenet {
			r.Poller = pollfd.Default().Options().String()
		}
	case kind == "gatenet":
		r.Kind = pollfd.Default().Options().String()
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// addPollerCounts adds to r's Extra where the round's wake-ups came from,
// per operation, from the default poller's counters: parks, wake-ups of
// parked waiters, drain-loop epoll_waits and harvests that found events.
// They say why a round costs what it does (docs/DESIGN.md, "The hop, and
// why latency is the hard part"); the round's setup is included, which is
// noise next to its operations.
func addPollerCounts(r *Result, before, after pollfd.Stats) {
	if r.Ops <= 0 {
		return
	}
	if r.Extra == nil {
		r.Extra = map[string]float64{}
	}
	per := func(a, b uint64) float64 { return float64(a-b) / float64(r.Ops) }
	r.Extra["parks_per_op"] = per(after.Parks, before.Parks)
	r.Extra["wakeups_per_op"] = per(after.Wakeups, before.Wakeups)
	r.Extra["drain_waits_per_op"] = per(after.EpollWaits, before.EpollWaits)
	r.Extra["harvests_per_op"] = per(after.Harvests, before.Harvests)
	r.Extra["harvests_deferred_per_op"] = per(after.HarvestsDeferred, before.HarvestsDeferred)
	r.Extra["epoll_adds_per_op"] = per(after.EpollAdds, before.EpollAdds)
}

// DrainShares says how the poller's delivery spread over its drain loops
// between two ShardStats snapshots elapsed apart (docs/DESIGN.md, "How
// delivery scales with the cores"):
//
//   - drain_busiest_core: the busiest drain loop's DrainTime over elapsed,
//     the share of one core its one goroutine needed. Near 1, that
//     goroutine is the process's serial point.
//   - drain_busiest_wakeups: the wake-ups that loop delivered over all
//     the poller's wake-ups: 1 when one goroutine woke everyone.
//   - drain_events_per_cpu_s: events the drain loops delivered per second
//     of their time, all shards.
//   - shards: how many there were.
func DrainShares(before, after []pollfd.Stats, elapsed time.Duration) map[string]float64 {
	var busiest, wakeups, busiestWakeups, events uint64
	var drainTime time.Duration
	for i := range after {
		dt := after[i].DrainTime - before[i].DrainTime
		drainTime += dt
		events += after[i].DrainEvents - before[i].DrainEvents
		wakeups += after[i].Wakeups - before[i].Wakeups
		if uint64(dt) > busiest {
			busiest = uint64(dt)
		}
		busiestWakeups = max(busiestWakeups, after[i].DrainWakeups-before[i].DrainWakeups)
	}
	out := map[string]float64{"shards": float64(len(after))}
	if elapsed > 0 {
		out["drain_busiest_core"] = float64(busiest) / float64(elapsed)
	}
	if wakeups > 0 {
		out["drain_busiest_wakeups"] = float64(busiestWakeups) / float64(wakeups)
	}
	if drainTime > 0 {
		out["drain_events_per_cpu_s"] = float64(events) / drainTime.Seconds()
	}
	return out
}

// Contenders returns baseline followed by the GATENET_POLLER name of every
// poller strategy, in the order each round runs them.
func Contenders(baseline string) []string {
	return []string{
		baseline,
		pollfd.Options{Strategy: pollfd.Dedicated}.String(),
		pollfd.Options{Strategy: pollfd.Dedicated, Harvest: true}.String(),
		pollfd.Options{Strategy: pollfd.Nested}.String(),
		pollfd.Options{Strategy: pollfd.Nested, Harvest: true}.String(),
		pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true}.String(), // the default
	}
}

// ---- parent ----

// Harness runs rounds in child processes and prints their results.
type Harness struct {
	Name       string
	Baseline   string
	Contenders []string // Baseline first
	Rounds     int
	Duration   time.Duration
	exe        string
	verbatim   bool // Command.Contenders: -kind is the contender, GATENET_POLLER untouched
}

func newHarness(c Command, rounds int, duration time.Duration) (*Harness, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	h := &Harness{
		Name:       c.Name,
		Baseline:   c.Baseline,
		Contenders: Contenders(c.Baseline),
		Rounds:     rounds,
		Duration:   duration,
		exe:        exe,
	}
	if c.Contenders != nil {
		h.Contenders, h.verbatim = slices.Clone(c.Contenders), true
	}
	return h, nil
}

// Header prints the title, the machine, and how the rounds are run.
func (h *Harness) Header(title string) {
	fmt.Printf("# %s\n\n", title)
	fmt.Printf("%s.\n", Machine())
	fmt.Printf("%d round(s) of %v per contender, interleaved (%s), each in a fresh process.\n\n",
		h.Rounds, h.Duration, strings.Join(h.Contenders, ", "))
}

// Machine describes this machine: Go version, platform, CPUs, GOMAXPROCS
// and kernel release.
func Machine() string {
	var u unix.Utsname
	kernel := "?"
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	return fmt.Sprintf("%s %s/%s, %d CPUs, GOMAXPROCS %d, Linux %s",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), kernel)
}

// label names a workload in progress and error messages: the size is left
// out when it is 0 (a workload without one).
func label(mode string, size int) string {
	if size == 0 {
		return mode
	}
	return fmt.Sprintf("%s size=%d", mode, size)
}

// Collect runs Rounds × Contenders children of mode with size, alternating
// the contenders within each round so that drift in the machine's load
// spreads over all of them, and returns the results per contender.
func (h *Harness) Collect(mode string, size int) (map[string][]Result, error) {
	return h.CollectFor(mode, size, h.Contenders)
}

// CollectFor is Collect with another list of contenders.
func (h *Harness) CollectFor(mode string, size int, contenders []string) (map[string][]Result, error) {
	out := map[string][]Result{}
	what := label(mode, size)
	tty := isTerminal(os.Stderr)
	if !tty {
		fmt.Fprintf(os.Stderr, "%s: running %s\n", h.Name, what)
	}
	for round := 1; round <= h.Rounds; round++ {
		for _, c := range contenders {
			if tty {
				fmt.Fprintf(os.Stderr, "\r%s round %d/%d: %-18s", what, round, h.Rounds, c)
			}
			r, err := h.runOne(mode, c, size)
			if err != nil {
				if tty {
					fmt.Fprintln(os.Stderr)
				}
				return nil, fmt.Errorf("%s %s round %d: %w", what, c, round, err)
			}
			out[c] = append(out[c], r)
		}
	}
	if tty {
		fmt.Fprintf(os.Stderr, "\r%-60s\r", "")
	}
	return out, nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// runOne runs one round of mode for contender in a child process.
func (h *Harness) runOne(mode, contender string, size int) (Result, error) {
	kind := "gatenet"
	if contender == h.Baseline || h.verbatim {
		kind = contender
	}
	cmd := exec.Command(h.exe, "-child", mode, "-kind", kind,
		"-size", fmt.Sprint(size), "-duration", h.Duration.String())
	env := slices.DeleteFunc(os.Environ(), func(s string) bool {
		return strings.HasPrefix(s, "GATENET_POLLER=")
	})
	if h.verbatim {
		env = os.Environ()
	} else if kind == "gatenet" {
		env = append(env, "GATENET_POLLER="+contender)
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var r Result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return Result{}, fmt.Errorf("child output %q: %v", stdout.String(), err)
	}
	// The default poller ignores a GATENET_POLLER it cannot parse: make
	// sure the child really ran the strategy asked for (on however many
	// shards its GOMAXPROCS or GATENET_SHARDS gave it: "/4-shards").
	if strategy, _, _ := strings.Cut(r.Kind, "/"); strategy != contender {
		return Result{}, fmt.Errorf("child ran %q, want %q", r.Kind, contender)
	}
	if r.Ops == 0 || r.Seconds <= 0 {
		return Result{}, fmt.Errorf("child measured nothing: %+v", r)
	}
	return r, nil
}

// Stat is a median with its range.
type Stat struct{ Med, Min, Max float64 }

// Summarize returns the median and range of xs, which must not be empty.
func Summarize(xs []float64) Stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Stat{med, s[0], s[n-1]}
}

// StatOf summarizes f over rs.
func StatOf(rs []Result, f func(Result) float64) Stat {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return Summarize(xs)
}

// Metric is one column of a table (followed by its ratio to the baseline).
type Metric struct {
	Header string               // "round trips/s"; the table adds ", median (min–max)"
	Value  func(Result) float64 // the metric of one round
	Format func(float64) string // how a value prints
}

// Table prints a markdown table under "## title": a row per contender
// (rowHeader heads their column), and for each metric its median
// (min–max) and the ratio of the medians to the baseline's.
func (h *Harness) Table(title, rowHeader string, res map[string][]Result, metrics ...Metric) {
	fmt.Printf("\n## %s\n\n", title)
	var head, rule strings.Builder
	head.WriteString("| " + rowHeader + " |")
	rule.WriteString("|---|")
	for _, m := range metrics {
		fmt.Fprintf(&head, " %s, median (min–max) | vs %s |", m.Header, h.Baseline)
		rule.WriteString("---:|---:|")
	}
	fmt.Println(head.String())
	fmt.Println(rule.String())
	base := make([]Stat, len(metrics))
	for i, m := range metrics {
		base[i] = StatOf(res[h.Baseline], m.Value)
	}
	for _, c := range h.Contenders {
		var row strings.Builder
		row.WriteString("| " + c + " |")
		for i, m := range metrics {
			s := StatOf(res[c], m.Value)
			fmt.Fprintf(&row, " %s | %.2f |", StatCell(s, m.Format), s.Med/base[i].Med)
		}
		fmt.Println(row.String())
	}
}

// Kilo formats a rate as "123.4k".
func Kilo(x float64) string { return fmt.Sprintf("%.1fk", x/1e3) }

// Fixed returns a format with prec decimals.
func Fixed(prec int) func(float64) string {
	return func(x float64) string { return fmt.Sprintf("%.*f", prec, x) }
}

// ---- child ----

// CPUNanos is this process's user plus system CPU time, all threads.
func CPUNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// CheckEvery is how many operations Run calls between clock reads.
const CheckEvery = 64

// Meter holds the clocks at the start of a measured part.
type Meter struct {
	t0   time.Time
	cpu0 int64
}

// StartMeter reads the clocks.
func StartMeter() Meter {
	cpu0 := CPUNanos()
	return Meter{time.Now(), cpu0}
}

// Stop returns the wall and CPU time since m started.
func (m Meter) Stop() (elapsed time.Duration, cpuNanos int64) {
	return time.Since(m.t0), CPUNanos() - m.cpu0
}

// Run calls op warm times to warm up (threads started, poller and stacks
// grown), then starts a Meter and calls op in batches of CheckEvery until
// duration has passed. It returns how many calls the measured part made
// and its Meter, still running so that the caller can include a drain in
// the measurement; it stops at op's first error.
func Run(warm int, duration time.Duration, op func() error) (n int64, m Meter, err error) {
	for range warm {
		if err := op(); err != nil {
			return 0, StartMeter(), err
		}
	}
	m = StartMeter()
	end := m.t0.Add(duration)
	for {
		for range CheckEvery {
			if err := op(); err != nil {
				return n, m, err
			}
			n++
		}
		if !time.Now().Before(end) {
			return n, m, nil
		}
	}
}

// Echo starts the ping-pong peer: it reads size-byte messages from r and
// writes each back to w until r reports EOF (the other side closed: the
// run is over, and nil is sent) or an error, which is sent. The channel
// has room for the one result.
func Echo(r io.Reader, w io.Writer, size int) <-chan error {
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(r, buf); err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- err
				return
			}
			if _, err := w.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	return done
}

// Drained is what Drain read: the byte count, and the error that ended it
// (nil for EOF).
type Drained struct {
	N   int64
	Err error
}

// Drain starts the bulk peer: it reads r with a size-byte buffer, discarding
// the bytes, until EOF or an error, and sends the total on the channel
// (which has room for it).
func Drain(r io.Reader, size int) <-chan Drained {
	done := make(chan Drained, 1)
	go func() {
		buf := make([]byte, size)
		var n int64
		for {
			m, err := r.Read(buf)
			n += int64(m)
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- Drained{n, err}
				return
			}
		}
	}()
	return done
}
