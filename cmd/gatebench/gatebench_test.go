//go:build linux

package main

// The harness's smoke test: every workload's child runs in this process,
// for each contender, for a fraction of a second (idle and scale with a
// couple of hundred connections) and must report a non-zero figure, with
// no goroutine or descriptor left behind. No test asserts a speed.

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
)

const smokeDuration = 150 * time.Millisecond

func TestMain(m *testing.M) {
	// Start gatenet's default poller (its descriptors live as long as the
	// process) before the first leak check counts descriptors.
	if r, w, err := gatenet.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	testutil.VerifyTestMain(m)
}

func TestWorkloadsSmoke(t *testing.T) {
	climit := ""
	if dir := t.TempDir(); true {
		if path, err := buildCLimit(dir); err != nil {
			t.Logf("no C limit: %v", err)
		} else {
			climit = path
			t.Setenv(climitEnv, path)
		}
	}
	_, wrkErr := exec.LookPath("wrk")
	cases := []struct {
		mode  string
		size  int
		kinds []string
		extra []string // Extra keys that must be non-zero
	}{
		{"pingpong", pingSize, []string{"net", "gatenet", "c"}, []string{"p50_us", "p99_us"}},
		{"bulk", bulkChunk, []string{"net", "gatenet", "c"}, nil},
		{"echo-many", 200, []string{"net", "gatenet"}, []string{"p50_us", "p99_us"}},
		{"accept", 0, []string{"net", "gatenet"}, nil},
		{"dial", dialClients, []string{"net", "gatenet"}, []string{"p50_us", "p99_us"}},
		{"http", httpClients, []string{"net", "gatenet"}, []string{"p50_us", "p99_us", "p999_us", "sched_p99_us"}},
		{"wrk", httpClients, []string{"net", "gatenet"}, []string{"wrk_rps", "p50_us", "p99_us", "p999_us", "sched_p99_us"}},
		{"wrk", 300, []string{"net", "gatenet"}, []string{"wrk_rps", "p99_us"}},
		{"tls", tlsClients, []string{"net", "gatenet"}, nil},
		{"pipe", pingSize, []string{"net", "gatenet"}, nil},
		{"idle", 200, []string{"net+" + benchharness.IdlePeek, "net+" + benchharness.IdleRead4K,
			"gatenet+" + benchharness.IdleWaitRead, "gatenet+" + benchharness.IdleQueue}, nil},
		{"scale", 200, []string{"net", "gatenet", "net+idle", "gatenet+idle"}, []string{"p50_us"}},
	}
	for _, c := range cases {
		for _, kind := range c.kinds {
			t.Run(fmt.Sprintf("%s-%d/%s", c.mode, c.size, kind), func(t *testing.T) {
				if kind == "c" && climit == "" {
					t.Skip("no C compiler")
				}
				if c.mode == "wrk" && wrkErr != nil {
					t.Skipf("wrk: %v", wrkErr)
				}
				testutil.CheckLeaks(t)
				testutil.Watchdog(t, 2*time.Minute)
				r, err := runChild(c.mode, kind, c.size, smokeDuration)
				if err != nil {
					t.Fatal(err)
				}
				rate := float64(r.Ops) / r.Seconds
				if r.Ops <= 0 || !(rate > 0) || math.IsInf(rate, 0) {
					t.Fatalf("measured nothing: %+v", r)
				}
				for _, k := range c.extra {
					if kind == "c" {
						break // the C limit measures rates only
					}
					if !(r.Extra[k] > 0) {
						t.Errorf("Extra[%q] = %v, want > 0 (%+v)", k, r.Extra[k], r)
					}
				}
				if c.mode == "idle" {
					// In this process the runtime reuses what earlier
					// subtests freed (dead goroutines, partly used spans),
					// so a held conn may add nothing visible: the figure
					// is checked to be there, and the held conns to be
					// real (HoldIdle checks each delivers its byte).
					if v, ok := r.Extra["bytes_per_conn"]; !ok || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("bytes_per_conn = %v, %v", v, ok)
					}
					if r.Ops != int64(c.size) {
						t.Errorf("held %d conns, want %d", r.Ops, c.size)
					}
				}
				if c.mode == "scale" && strings.HasSuffix(kind, "+idle") && r.Extra["idle_conns"] != float64(c.size) {
					t.Errorf("scale ran with %v idle conns, want %d", r.Extra["idle_conns"], c.size)
				}
				t.Logf("%d ops in %.3fs: %.0f/s, CPU %.2f µs/op, extra %v",
					r.Ops, r.Seconds, rate, float64(r.CPUNanos)/float64(r.Ops)/1e3, r.Extra)
			})
		}
	}
}

func TestIdleRejectsTheOtherLibrarysPattern(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, kind := range []string{"net+" + benchharness.IdleWaitRead, "gatenet+" + benchharness.IdlePeek, "net+nonsense"} {
		if _, err := runChild("idle", kind, 10, smokeDuration); err == nil {
			t.Errorf("idle %s: no error", kind)
		}
	}
}

func TestSelectWorkloads(t *testing.T) {
	all, err := selectWorkloads("all")
	if err != nil || len(all) != len(workloads) {
		t.Fatalf("all: %d workloads, %v", len(all), err)
	}
	two, err := selectWorkloads("tls, pingpong")
	if err != nil || len(two) != 2 || two[0].name != "tls" || two[1].name != "pingpong" {
		t.Fatalf("tls, pingpong: %v, %v", two, err)
	}
	if !needsCLimit(two) || needsCLimit(two[:1]) {
		t.Error("needsCLimit")
	}
	if _, err := selectWorkloads("pingpong,nope"); err == nil {
		t.Error("an unknown workload was accepted")
	}
}

// TestReport builds the table and JSON from made-up rounds.
func TestReport(t *testing.T) {
	rounds := func(ops ...int64) []result {
		var rs []result
		for _, n := range ops {
			rs = append(rs, result{Ops: n, Seconds: 1, CPUNanos: n * 1000, Poller: "nested+harvest",
				Extra: map[string]float64{"p50_us": 10}})
		}
		return rs
	}
	rep := &report{Rounds: 3, Results: map[string]map[string][]result{}, climit: true}
	rep.add("pingpong", "round trips/s", kilo, false, rounds(100e3, 90e3, 110e3), rounds(80e3, 85e3, 70e3), rounds(200e3, 200e3, 200e3), perSec)
	rep.add("pingpong", "p50 µs", fixed1, true, rounds(1, 2, 3), rounds(1, 2, 3), nil, extra("p50_us"))
	rep.Poller = "nested+harvest"
	var b bytes.Buffer
	rep.print(&b)
	for _, want := range []string{
		"| pingpong | round trips/s | 100.0k (90.0k–110.0k) | 80.0k (70.0k–85.0k) | 0.80 | 200.0k (200.0k–200.0k) |",
		"| pingpong | p50 µs ↓ | 10.0 (10.0–10.0) | 10.0 (10.0–10.0) | 1.00 |  |",
		"nested+harvest",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	name := t.TempDir() + "/out.json"
	if err := rep.writeJSON(name); err != nil {
		t.Fatal(err)
	}
}

func TestParseWrk(t *testing.T) {
	out := []byte(`Running 1s test @ http://127.0.0.1:1/
  2 threads and 64 connections
  Latency Distribution
     50%    1.23ms
     99%    7.40ms
  42700 requests in 1.00s, 6.5MB read
Requests/sec:  42700.50
Transfer/sec:      6.5MB
gatebench-latency-us p50=1230 p99=7400 p999=12000
`)
	r, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 42700 || r.Extra["wrk_rps"] != 42700.5 || r.Extra["p50_us"] != 1230 ||
		r.Extra["p99_us"] != 7400 || r.Extra["p999_us"] != 12000 {
		t.Errorf("parsed %+v", r)
	}
	if math.Abs(float64(r.Ops)/r.Seconds-42700.5) > 1e-6 {
		t.Errorf("rate %v", float64(r.Ops)/r.Seconds)
	}
	for _, bad := range [][]byte{
		bytes.Replace(out, []byte("gatebench-latency-us"), []byte("x"), 1),
		append(bytes.Clone(out), "  Socket errors: connect 0, read 3, write 0, timeout 0\n"...),
		append(bytes.Clone(out), "  Non-2xx or 3xx responses: 7\n"...),
	} {
		if _, err := parseWrk(bad); err == nil {
			t.Errorf("no error for:\n%s", bad)
		}
	}
}

func TestParseProcs(t *testing.T) {
	got, err := parseProcs(" 2, 4,8 ,16")
	if err != nil || fmt.Sprint(got) != "[2 4 8 16]" {
		t.Fatalf("parseProcs: %v, %v", got, err)
	}
	if got, err := parseProcs(""); got != nil || err != nil {
		t.Errorf("empty: %v, %v", got, err)
	}
	for _, bad := range []string{"0", "-2", "2,x", "2,,4", "4,4", "1.5"} {
		if _, err := parseProcs(bad); err == nil {
			t.Errorf("-procs %q accepted", bad)
		}
	}
}

// TestCores builds the per-GOMAXPROCS curve and the delivery table from
// made-up rounds.
func TestCores(t *testing.T) {
	rep := func(procs int, ratio float64, core float64) *report {
		gn := []result{{Ops: 1, Seconds: 1, Extra: map[string]float64{
			"shards": 1, "drain_busiest_core": core, "drain_busiest_wakeups": 0.5, "drain_events_per_cpu_s": 2e6}}}
		r := &report{GOMAXPROCS: procs, Machine: "go, linux/amd64, 2 CPUs, GOMAXPROCS 2, Linux x",
			Results: map[string]map[string][]result{"echo-many": {"gatenet": gn}}}
		r.add("echo-many", "messages/s", kilo, false, []result{{Ops: 100, Seconds: 1}}, []result{{Ops: int64(100 * ratio), Seconds: 1}}, nil, perSec)
		return r
	}
	var b bytes.Buffer
	reps := []*report{rep(2, 1.2, 0.25), rep(16, 0.9, 0.8)}
	printCores(&b, reps)
	reps[1].print(&b)
	for _, want := range []string{
		"## Cores: gatenet/net by GOMAXPROCS (2 CPUs here)",
		"| workload | metric | 2 | 16 |",
		"| echo-many | messages/s | 1.20 | 0.90 |",
		"| echo-many | gatenet: busiest drain loop, share of a core | 25% | 80% |",
		"| echo-many | gatenet: wake-ups the busiest drain loop delivered | 50% | 50% |",
		"| echo-many | 1 | 80 (80–80) | 50 (50–50) | 2000 (2000–2000) |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
