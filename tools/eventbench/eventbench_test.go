//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary be its own child: the parent re-executes
// os.Executable() with -child, as the command does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		if err := run(os.Args[1:], os.Stdout, os.Stderr, os.Stdin); err != nil {
			os.Stderr.WriteString("eventbench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSmoke runs every workload against every server for one short round
// each and checks the report: a row per figure, every value and ratio
// positive and finite, and the JSON with every round.
func TestSmoke(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "eventbench.json")
	var out, errOut bytes.Buffer
	args := []string{"-rounds", "1", "-duration", "100ms", "-conns", "50", "-idle", "500", "-json", jsonFile}
	start := time.Now()
	if err := run(args, &out, &errOut, strings.NewReader("")); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	t.Logf("%v:\n%s", time.Since(start), out.String())
	for _, w := range workloads {
		for _, m := range w.metrics {
			if !strings.Contains(out.String(), "| "+w.name+" | "+m.name) {
				t.Errorf("no row for %s %s", w.name, m.name)
			}
		}
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if want := len(workloads) * len(serverNames); len(rep.Results) != want {
		t.Errorf("%d results in the JSON, want %d", len(rep.Results), want)
	}
	// bulk-apart's server and clients ran in two processes, neither this
	// one.
	for _, r := range rep.Results {
		if r.Workload != "bulk-apart" {
			continue
		}
		spid, cpid := int(r.Extra["server_pid"]), int(r.Extra["client_pid"])
		if spid == 0 || cpid == 0 || spid == cpid || spid == os.Getpid() || cpid == os.Getpid() {
			t.Errorf("bulk-apart %s: server pid %d, clients pid %d, this %d", r.Server, spid, cpid, os.Getpid())
		}
		if r.CPUNanos <= 0 || r.Extra["client_cpu_ns"] <= 0 || r.Extra["server_secs"] <= 0 {
			t.Errorf("bulk-apart %s: CPU %d ns (server), %v", r.Server, r.CPUNanos, r.Extra)
		}
	}
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	for _, r := range rep.Rows {
		for srv, s := range r.Stats {
			if !ok(s.Med) {
				t.Errorf("%s %s %s: %v", r.Workload, r.Metric, srv, s)
			}
		}
		if !ok(r.VsGnet.OfMedians) || !ok(r.VsNbio.OfMedians) {
			t.Errorf("%s %s: ratios %v %v", r.Workload, r.Metric, r.VsGnet, r.VsNbio)
		}
	}
}

func TestWorkloadsFlag(t *testing.T) {
	ws, err := selectWorkloads("bulk, idle")
	if err != nil || len(ws) != 2 || ws[0].name != "bulk" || ws[1].name != "idle" {
		t.Errorf("selectWorkloads: %v, %v", ws, err)
	}
	if _, err := selectWorkloads("bulk,nope"); err == nil {
		t.Error("an unknown workload was accepted")
	}
}

func TestSummarize(t *testing.T) {
	if s := summarize([]float64{3, 1, 2}); s != (stat{Med: 2, Min: 1, Max: 3}) {
		t.Errorf("odd: %v", s)
	}
	if s := summarize([]float64{4, 1, 2, 3}); s != (stat{Med: 2.5, Min: 1, Max: 4}) {
		t.Errorf("even: %v", s)
	}
}
