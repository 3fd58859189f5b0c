package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// smallChart is the chart of testdata/small.json alone.
func smallChart(t *testing.T) chart {
	t.Helper()
	rep, err := readReportFile("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := build([]report{rep})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBuildOneReport(t *testing.T) {
	c := smallChart(t)
	if c.Runs != 1 || c.Rounds != 3 {
		t.Errorf("runs, rounds = %d, %d; want 1, 3", c.Runs, c.Rounds)
	}
	// One rate per workload (idle has none; scale's is the derived one),
	// p99 only where the workload has a "p99 …" row.
	wantRates := []point{
		{Workload: "pingpong", Label: "pingpong", Ratio: 0.8, Lo: 72.0 / 110, Hi: 88.0 / 90},
		{Workload: "http", Label: "http", Ratio: 1.1, Lo: 1.1, Hi: 1.1},
		{Workload: "scale", Label: "scale: 5000 idle ÷ none", Ratio: 1, Lo: 1, Hi: 1},
	}
	if len(c.Rates) != len(wantRates) {
		t.Fatalf("rates = %+v; want %d", c.Rates, len(wantRates))
	}
	for i, w := range wantRates {
		g := c.Rates[i]
		if g.Workload != w.Workload || g.Label != w.Label || !near(g.Ratio, w.Ratio) || !near(g.Lo, w.Lo) || !near(g.Hi, w.Hi) {
			t.Errorf("rate %d = %+v; want %+v", i, g, w)
		}
	}
	if len(c.P99) != 1 || c.P99[0].Workload != "pingpong" || c.P99[0].Metric != "p99 µs" ||
		!near(c.P99[0].Lo, 48.0/50) || !near(c.P99[0].Hi, 60.0/40) {
		t.Errorf("p99 = %+v; want pingpong's p99 µs, 0.96–1.5", c.P99)
	}
}

func TestBuildSeveralReports(t *testing.T) {
	rep, err := readReportFile("testdata/small.json")
	if err != nil {
		t.Fatal(err)
	}
	var reps []report
	for _, r := range []float64{0.7, 0.9, 0.75} {
		rep := rep
		rep.Rows = []row{{Workload: "pingpong", Metric: "round trips/s (64 B)", Ratio: r}}
		reps = append(reps, rep)
	}
	c, err := build(reps)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Rates[0]
	if c.Runs != 3 || p.Runs != 3 || !near(p.Ratio, 0.75) || !near(p.Lo, 0.7) || !near(p.Hi, 0.9) {
		t.Errorf("got %+v (runs %d); want the median 0.75 of three runs, 0.7–0.9", p, c.Runs)
	}
}

func TestSavePNG(t *testing.T) {
	c := smallChart(t)
	name := filepath.Join(t.TempDir(), "chart.png")
	if err := save(c, name, 900, 500); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 900 || cfg.Height != 500 {
		t.Errorf("size = %d×%d; want 900×500", cfg.Width, cfg.Height)
	}
}

func TestNotAReport(t *testing.T) {
	if _, err := build(nil); err == nil {
		t.Error("build(nil): no error")
	}
	if _, err := readReportFile("perfchart_test.go"); err == nil {
		t.Error("reading a Go file as a report: no error")
	}
}
