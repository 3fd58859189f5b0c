package main

// Reading gatebench's -json reports and reducing them to the chart's rows.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// stat, row and report mirror the parts of cmd/gatebench's JSON report
// (cmd/gatebench/report.go) that the chart reads.
type stat struct {
	Med, Min, Max float64
}

type row struct {
	Workload      string  `json:"workload"`
	Metric        string  `json:"metric"`
	LowerIsBetter bool    `json:"lower_is_better"`
	Net           stat    `json:"net"`
	Gatenet       stat    `json:"gatenet"`
	Ratio         float64 `json:"ratio"`
}

type report struct {
	Command  string `json:"command"`
	Machine  string `json:"machine"`
	Rounds   int    `json:"rounds"`
	Duration string `json:"duration"`
	Rows     []row  `json:"rows"`
}

func readReport(r io.Reader) (report, error) {
	var rep report
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return rep, err
	}
	if len(rep.Rows) == 0 {
		return rep, fmt.Errorf("no rows (is this gatebench -json output?)")
	}
	return rep, nil
}

func readReportFile(name string) (report, error) {
	f, err := os.Open(name)
	if err != nil {
		return report{}, err
	}
	defer f.Close()
	rep, err := readReport(f)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", name, err)
	}
	return rep, nil
}

// point is one mark on the chart: gatenet / net for one figure, with its
// range.
type point struct {
	Workload string
	Metric   string
	Label    string  // the name on the chart's axis
	Ratio    float64 // the median of the runs' ratios (one run: its ratio)
	Lo, Hi   float64 // the range of the runs' ratios (one run: see ratioRange)
	Runs     int     // how many reports had this figure
}

// chart is what gets drawn: the headline rate per workload and the p99
// latency where the workload has one.
type chart struct {
	Rates, P99 []point
	Runs       int    // reports read
	Rounds     int    // rounds per report (the first report's)
	Machine    string // the first report's
}

// isP99 reports whether m is a workload's p99 latency ("p99 µs",
// "p99 µs/message", …; not p99.9 nor the scheduling latencies).
func isP99(r row) bool {
	return r.LowerIsBetter && strings.HasPrefix(r.Metric, "p99 ")
}

// pick returns, for each workload in order of first appearance, its
// headline rate row and its p99 row (nil if none). A workload's headline
// rate is its last higher-is-better row: gatebench lists the plain rate
// first and a derived one after it, and for scale the derived one (round
// trips with 5,000 idle connections ÷ without, per round) is the figure;
// every other workload has a single rate.
func pick(rows []row) (order []string, rate, p99 map[string]row) {
	rate, p99 = map[string]row{}, map[string]row{}
	for _, r := range rows {
		if !slices.Contains(order, r.Workload) {
			order = append(order, r.Workload)
		}
		switch {
		case !r.LowerIsBetter:
			rate[r.Workload] = r
		case isP99(r):
			if _, ok := p99[r.Workload]; !ok {
				p99[r.Workload] = r
			}
		}
	}
	return order, rate, p99
}

// ratioRange is the range of gatenet / net that one report's rounds allow:
// gatenet's slowest round over net's fastest to gatenet's fastest over
// net's slowest (for latencies, the same with "smallest" and "largest").
func ratioRange(r row) (lo, hi float64) {
	return r.Gatenet.Min / r.Net.Max, r.Gatenet.Max / r.Net.Min
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// reduce makes a point out of one figure's rows, one per report.
func reduce(rs []row) point {
	p := point{Workload: rs[0].Workload, Metric: rs[0].Metric, Runs: len(rs)}
	if len(rs) == 1 {
		p.Ratio = rs[0].Ratio
		p.Lo, p.Hi = ratioRange(rs[0])
		return p
	}
	ratios := make([]float64, len(rs))
	for i, r := range rs {
		ratios[i] = r.Ratio
	}
	p.Ratio = median(ratios)
	p.Lo, p.Hi = slices.Min(ratios), slices.Max(ratios)
	return p
}

// build reduces reports (one per gatebench run) to the chart's points.
// With several reports a point is the median of the runs' ratios and its
// range their min–max; with one, the ratio of the medians and the range
// its rounds allow (ratioRange).
func build(reps []report) (chart, error) {
	if len(reps) == 0 {
		return chart{}, fmt.Errorf("no reports")
	}
	c := chart{Runs: len(reps), Rounds: reps[0].Rounds, Machine: reps[0].Machine}
	var order []string
	rates, p99s := map[string][]row{}, map[string][]row{}
	for _, rep := range reps {
		o, rate, p99 := pick(rep.Rows)
		for _, w := range o {
			if !slices.Contains(order, w) {
				order = append(order, w)
			}
		}
		for w, r := range rate {
			rates[w] = append(rates[w], r)
		}
		for w, r := range p99 {
			p99s[w] = append(p99s[w], r)
		}
	}
	for _, w := range order {
		if rs := rates[w]; len(rs) > 0 {
			p := reduce(rs)
			p.Label = label(w, rs[0].Metric, reps[0].Rows)
			c.Rates = append(c.Rates, p)
		}
		if rs := p99s[w]; len(rs) > 0 {
			p := reduce(rs)
			p.Label = w
			c.P99 = append(c.P99, p)
		}
	}
	if len(c.Rates) == 0 && len(c.P99) == 0 {
		return c, fmt.Errorf("no rate or p99 rows in the reports")
	}
	return c, nil
}

// label names a rate on the chart: the workload, and the metric too when
// the workload has more than one rate (scale).
func label(workload, metric string, rows []row) string {
	n := 0
	for _, r := range rows {
		if r.Workload == workload && !r.LowerIsBetter {
			n++
		}
	}
	if n > 1 {
		return workload + ": " + strings.TrimSuffix(metric, ", per round")
	}
	return workload
}
