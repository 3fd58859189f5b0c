//go:build linux

package gatenet_test

// What it costs a server to hold idle connections (issue 6): 8,000 idle
// loopback TCP connections, server side measured, held in each of these
// ways:
//
//	net-read-4k         net: a goroutine per conn blocked in Read with a
//	                    4 KiB buffer (the usual server)
//	net-peek            net's best buffer-less form: a goroutine per conn
//	                    parked in SyscallConn().Read with a
//	                    recv(MSG_PEEK|MSG_DONTWAIT) probe
//	gatenet-waitread    gatenet: a goroutine per conn parked in
//	                    WaitRead(context.Background()), no buffer
//	gatenet-waitread-ctx the same with a cancellable (server) context,
//	                    whose wait is a two-way select
//	gatenet-readyqueue  gatenet: every conn in one ReadyQueue, no
//	                    goroutine and no buffer per conn
//
// For each: the client conns are dialled first (net, in batches of at
// most perListener per listener, so they wait in the accept queues), the
// baseline is taken, then the server accepts them all and holds them the
// pattern's way, and the second snapshot is taken. The difference divided
// by the count is the per-connection holding cost: the accepted conn with
// everything the library allocates for it, plus the pattern's goroutine,
// stack and buffer. Heap is HeapInuse+StackInuse after a GC; RSS is
// /proc/self/statm's resident pages, after returning free pages to the OS
// at both snapshots. Then every client writes one byte, and every held
// conn must deliver it (so the holding is real), and everything is closed
// with the descriptor count back to where it was.
//
// Each pattern runs in a fresh process started from this test binary
// (-test.run=^TestIdleMemory$ with GATENET_IDLE_CHILD set), one after the
// other. In one process the later patterns would be subsidised by the
// earlier ones: the runtime never frees a goroutine's g (it keeps dead
// ones for reuse), nor net's pollDescs, and heap spans freed by one
// pattern are reused by the next. GATENET_IDLE_INPROC=1 runs them all in
// this process instead, to see that effect.
//
// It is a measurement: it fails only when a pattern costs more than
// idleSanityBound per connection (a leak), and logs whether the issue's
// targets are met. Run it with
//
//	GATENET_IDLE=1 go test -count=1 -run TestIdleMemory -v .
//
// GATENET_IDLE_CONNS changes the count; GATENET_IDLE_PROFILE=1 also logs,
// per pattern, the allocation sites live per connection (a heap profile
// at MemProfileRate 1 from the baseline on; it adds a little RSS, and its
// deeper allocation stacks can double goroutine stacks, so take the
// figures from a run without it). By default each holding goroutine
// blocks straight from its entry function, the shallowest possible;
// GATENET_IDLE_DEPTH=k puts k frames of about 100 bytes above the
// blocking call, as a server's handler code would: a goroutine whose
// deepest excursion passes the 2 KiB starting stack's limit keeps a 4 KiB
// stack, which shows how much headroom each pattern leaves.
// TestIdlePatterns runs the same patterns on a few hundred connections,
// without logging figures, so that -race and the leak checks cover them.
//
// The holding, measuring and profiling is internal/benchharness.HoldIdle,
// which cmd/gatebench's idle workload runs too; this file picks the
// patterns, runs each in its child and prints the table.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
)

const (
	idleDefaultConns = 8000
	idleSanityBound  = 64 << 10 // bytes per conn; above this something leaks
)

// idlePattern is one way of holding idle server conns: one of
// benchharness.HoldIdle's.
type idlePattern struct {
	name   string
	label  string // for the table
	hold   string // benchharness.IdleRead4K, IdlePeek, …
	target int64  // the target in bytes per conn (0: none)
}

func idlePatterns() []idlePattern {
	return []idlePattern{
		{name: "net-read-4k", label: "(a) net: goroutine in Read, 4 KiB buffer", hold: benchharness.IdleRead4K},
		{name: "net-peek", label: "(b) net: goroutine in RawConn.Read, MSG_PEEK", hold: benchharness.IdlePeek},
		{name: "gatenet-waitread", label: "(c) gatenet: goroutine in WaitRead(Background)", hold: benchharness.IdleWaitRead, target: 3000},
		{name: "gatenet-waitread-ctx", label: "(c') gatenet: WaitRead(cancellable ctx)", hold: benchharness.IdleWaitReadCtx},
		{name: "gatenet-readyqueue", label: "(d) gatenet: one ReadyQueue, no goroutine", hold: benchharness.IdleQueue, target: 1000},
	}
}

// idleResult is one pattern's measurement (JSON from a child process).
type idleResult struct {
	Pattern    string
	Conns      int
	HeapDelta  int64 // HeapInuse + StackInuse
	StackDelta int64
	RSSDelta   int64
	Sites      []string `json:",omitempty"` // GATENET_IDLE_PROFILE
}

func (r idleResult) perConn(v int64) float64 { return float64(v) / float64(r.Conns) }

// idleOptions says how to run a pattern.
type idleOptions struct {
	conns   int
	depth   int  // extra frames above each holding goroutine's blocking call
	measure bool // log the measurement
	profile bool // and take the heap profile
}

// runIdlePattern holds o.conns idle conns the pattern's way with
// benchharness.HoldIdle: measures them, wakes each and checks it
// delivers, once, and closes everything. Call it in a subtest of its own:
// it checks for leaks when that subtest ends.
func runIdlePattern(t *testing.T, pat idlePattern, o idleOptions) idleResult {
	n := o.conns
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	raiseNoFile(t, uint64(2*n+256))

	kind := "net"
	if benchharness.IdleGatenet(pat.hold) {
		kind = "gatenet"
	}
	s, err := benchharness.StackFor(kind)
	if err != nil {
		t.Fatal(err)
	}
	r, err := benchharness.HoldIdle(s, pat.hold, n, benchharness.IdleOptions{Depth: o.depth, Profile: o.profile})
	if err != nil {
		t.Fatalf("%s: %v", pat.name, err)
	}
	res := idleResult{Pattern: pat.name, Conns: n, HeapDelta: r.Heap, StackDelta: r.Stack, RSSDelta: r.RSS, Sites: r.Sites}
	if o.measure {
		t.Logf("%s: heap %+d B (stack %+d B), RSS %+d B over %d conns: %.0f heap B/conn, %.0f RSS B/conn",
			pat.name, res.HeapDelta, res.StackDelta, res.RSSDelta, n,
			res.perConn(res.HeapDelta), res.perConn(res.RSSDelta))
	}
	return res
}

// TestIdleMemory is the measurement (see the top of the file).
func TestIdleMemory(t *testing.T) {
	if testing.Short() || os.Getenv("GATENET_IDLE") != "1" {
		t.Skip("a measurement: set GATENET_IDLE=1 (and not -short) to run it")
	}
	if testutil.Race {
		// The race detector's shadow memory grows every goroutine's cost
		// several times over, past the sanity bound: the figures would be
		// its, not the patterns'.
		t.Skip("a measurement of memory: run it without -race (GATENET_IDLE=1 go test -count=1 -run TestIdleMemory -v .)")
	}
	n := idleDefaultConns
	if s := os.Getenv("GATENET_IDLE_CONNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("GATENET_IDLE_CONNS=%q", s)
		}
		n = v
	}
	opts := idleOptions{conns: n, measure: true, profile: os.Getenv("GATENET_IDLE_PROFILE") == "1"}
	if s := os.Getenv("GATENET_IDLE_DEPTH"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			t.Fatalf("GATENET_IDLE_DEPTH=%q", s)
		}
		opts.depth = v
	}
	profile := opts.profile
	pats := idlePatterns()

	// A child: measure one pattern and write the result where the parent
	// said.
	if name := os.Getenv("GATENET_IDLE_CHILD"); name != "" {
		i := slices.IndexFunc(pats, func(p idlePattern) bool { return p.name == name })
		if i < 0 {
			t.Fatalf("GATENET_IDLE_CHILD=%q: no such pattern", name)
		}
		var res idleResult
		t.Run(name, func(t *testing.T) { res = runIdlePattern(t, pats[i], opts) })
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(os.Getenv("GATENET_IDLE_OUT"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}

	testutil.CheckLeaks(t)
	inproc := os.Getenv("GATENET_IDLE_INPROC") == "1"
	var results []idleResult
	for _, pat := range pats {
		var res idleResult
		var ok bool
		if inproc {
			ok = t.Run(pat.name, func(t *testing.T) { res = runIdlePattern(t, pat, opts) })
		} else {
			res, ok = runIdleChild(t, pat.name)
		}
		if !ok {
			continue
		}
		results = append(results, res)
	}

	var tbl strings.Builder
	mode := "each pattern in a fresh process"
	if inproc {
		mode = "all patterns in this process, one after the other"
	}
	fmt.Fprintf(&tbl, "idle connections held server-side: %d per pattern, %s, GOMAXPROCS=%d, %s\n",
		n, mode, runtime.GOMAXPROCS(0), runtime.Version())
	if opts.depth > 0 {
		fmt.Fprintf(&tbl, "goroutines block %d frames (about %d bytes) below their entry (GATENET_IDLE_DEPTH)\n",
			opts.depth, opts.depth*100)
	}
	fmt.Fprintf(&tbl, "%-48s %12s %12s %12s\n", "pattern", "heap B/conn", "(stack)", "RSS B/conn")
	for _, r := range results {
		label := r.Pattern
		for _, p := range pats {
			if p.name == r.Pattern {
				label = p.label
			}
		}
		fmt.Fprintf(&tbl, "%-48s %12.0f %12.0f %12.0f\n", label,
			r.perConn(r.HeapDelta), r.perConn(r.StackDelta), r.perConn(r.RSSDelta))
	}
	if profile {
		fmt.Fprintf(&tbl, "(GATENET_IDLE_PROFILE: profiling every allocation deepens the allocating stacks,\n"+
			" which can grow goroutine stacks to 4 KiB; take the figures from a run without it)\n")
	}
	t.Log("\n" + tbl.String())
	for _, r := range results {
		if len(r.Sites) > 0 {
			t.Logf("%s: live allocations per conn (heap profile):\n  %s", r.Pattern, strings.Join(r.Sites, "\n  "))
		}
	}

	for _, r := range results {
		heap, rss := r.perConn(r.HeapDelta), r.perConn(r.RSSDelta)
		if heap > idleSanityBound || rss > idleSanityBound {
			t.Errorf("%s: %.0f heap B/conn, %.0f RSS B/conn: over the %d B/conn sanity bound (a leak?)",
				r.Pattern, heap, rss, idleSanityBound)
		}
		for _, p := range pats {
			if p.name != r.Pattern || p.target == 0 {
				continue
			}
			verdict := func(v float64) string {
				if v <= float64(p.target) {
					return "met"
				}
				return "NOT met"
			}
			t.Logf("target %s ≤ %d B/conn: RSS %.0f (%s), heap %.0f (%s)",
				r.Pattern, p.target, rss, verdict(rss), heap, verdict(heap))
		}
	}
}

// runIdleChild runs one pattern in a fresh process of this test binary and
// returns its result.
func runIdleChild(t *testing.T, name string) (idleResult, bool) {
	t.Helper()
	out := t.TempDir() + "/result.json"
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleMemory$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		"GATENET_IDLE=1",
		"GATENET_IDLE_CHILD="+name,
		"GATENET_IDLE_OUT="+out,
		"GATENET_IDLE_INPROC=")
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("pattern %s: child process: %v\n%s", name, err, output)
		return idleResult{}, false
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Errorf("pattern %s: no result (%v)\n%s", name, err, output)
		return idleResult{}, false
	}
	var res idleResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Errorf("pattern %s: result: %v", name, err)
		return idleResult{}, false
	}
	return res, true
}

// TestIdlePatterns runs every holding pattern on a few hundred conns,
// without logging figures: each conn delivers its byte once, and nothing leaks.
func TestIdlePatterns(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 100
	}
	for _, pat := range idlePatterns() {
		t.Run(pat.name, func(t *testing.T) { runIdlePattern(t, pat, idleOptions{conns: n}) })
		if pat.hold != benchharness.IdleQueue {
			t.Run(pat.name+"/deep", func(t *testing.T) { runIdlePattern(t, pat, idleOptions{conns: n / 4, depth: 4}) })
		}
	}
}
