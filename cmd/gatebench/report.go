//go:build linux

package main

// The report: one row per figure, printed as a markdown table and written
// as JSON with every round's raw result.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gatenet/gatenet/internal/benchharness"
)

type stat = benchharness.Stat

// row is one figure: the medians (and ranges) of net and gatenet, their
// ratio, and the C limit's where there is one.
type row struct {
	Workload      string  `json:"workload"`
	Metric        string  `json:"metric"`
	LowerIsBetter bool    `json:"lower_is_better,omitempty"`
	Net           stat    `json:"net"`
	Gatenet       stat    `json:"gatenet"`
	Ratio         float64 `json:"ratio"` // gatenet's median / net's
	Limit         *stat   `json:"limit,omitempty"`
	Poller        string  `json:"poller,omitempty"` // gatenet's strategy in its children

	format func(float64) string
}

type report struct {
	Command string `json:"command"`
	Machine string `json:"machine"`
	// GOMAXPROCS is the children's, from -procs (0: the parent's own,
	// which Machine gives).
	GOMAXPROCS int    `json:"gomaxprocs,omitempty"`
	Poller     string `json:"poller,omitempty"`
	Rounds     int    `json:"rounds"`
	Duration   string `json:"duration"`
	Rows       []row  `json:"rows"`
	// Results holds every round's raw result: workload → contender →
	// rounds in order.
	Results map[string]map[string][]result `json:"results"`
	Notes   []string                       `json:"notes,omitempty"`

	climit bool // the C limit was built
}

func values(rs []result, f func(result) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// poller is the gatenet strategy the rounds rs ran on.
func poller(rs []result) string {
	for _, r := range rs {
		if r.Poller != "" {
			return r.Poller
		}
	}
	return ""
}

// add appends a row of f over the rounds of net, gatenet and (if any) the
// C limit.
func (rep *report) add(workload, metric string, format func(float64) string, lower bool, net, gn, limit []result, f func(result) float64) {
	var lim []float64
	if len(limit) > 0 {
		lim = values(limit, f)
	}
	rep.addValues(workload, metric, format, lower, values(net, f), values(gn, f), lim, poller(gn))
}

// addValues appends a row of per-round values.
func (rep *report) addValues(workload, metric string, format func(float64) string, lower bool, net, gn, limit []float64, pollerName string) {
	if len(net) == 0 || len(gn) == 0 {
		return
	}
	r := row{
		Workload:      workload,
		Metric:        metric,
		LowerIsBetter: lower,
		Net:           benchharness.Summarize(net),
		Gatenet:       benchharness.Summarize(gn),
		Poller:        pollerName,
		format:        format,
	}
	r.Ratio = r.Gatenet.Med / r.Net.Med
	if len(limit) > 0 {
		s := benchharness.Summarize(limit)
		r.Limit = &s
	}
	rep.Rows = append(rep.Rows, r)
}

func (r row) cell(s stat) string {
	return fmt.Sprintf("%s (%s–%s)", r.format(s.Med), r.format(s.Min), r.format(s.Max))
}

// print writes the markdown table and the notes under it.
func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n## Medians of %d rounds (min–max); ratio = gatenet / net\n\n", rep.Rounds)
	fmt.Fprintln(w, "| workload | metric | net | gatenet | gatenet/net | limit (C, epoll, one thread) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	for _, r := range rep.Rows {
		metric := r.Metric
		if r.LowerIsBetter {
			metric += " ↓"
		}
		limit := ""
		if r.Limit != nil {
			limit = r.cell(*r.Limit)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f | %s |\n",
			r.Workload, metric, r.cell(r.Net), r.cell(r.Gatenet), r.Ratio, limit)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "↓: lower is better (for the others, higher is).")
	if rep.Poller != "" {
		fmt.Fprintf(w, "gatenet ran on its default poller: %s.\n", rep.Poller)
	}
	fmt.Fprintln(w, "pipe: the net column is os.Pipe. idle: HeapInuse+StackInuse after a GC per held server conn;",
		"the net column is the pattern named first. scale: both ends of each idle pair are the contender's.")
	if rep.climit {
		fmt.Fprintln(w, "limit: climit.c, cc -O2; both ends of the loopback connection in one thread around one epoll",
			"instance (level-triggered), no thread switch per message.")
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "Note: %s.\n", n)
	}
	rep.printDelivery(w)
}

// deliveryWorkloads are the workloads whose gatenet rounds carry the
// drain loops' figures (benchharness.DrainShares), in the table's order.
func deliveryWorkloads(rep *report) []string {
	var out []string
	for _, r := range rep.Rows {
		if _, ok := rep.deliveryStat(r.Workload, "shards"); ok && !slices.Contains(out, r.Workload) {
			out = append(out, r.Workload)
		}
	}
	return out
}

// deliveryStat is the median and range of gatenet's Extra[key] over the
// workload's rounds.
func (rep *report) deliveryStat(workload, key string) (stat, bool) {
	rs := rep.Results[workload]["gatenet"]
	var xs []float64
	for _, r := range rs {
		if v, ok := r.Extra[key]; ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return stat{}, false
	}
	return benchharness.Summarize(xs), true
}

// printDelivery prints how gatenet's delivery spread over its drain loops
// in each workload (benchharness.DrainShares).
func (rep *report) printDelivery(w io.Writer) {
	names := deliveryWorkloads(rep)
	if len(names) == 0 {
		return
	}
	fmt.Fprintln(w, "\ngatenet's delivery, medians (min–max): the busiest drain loop's share of one core and of the")
	fmt.Fprintln(w, "wake-ups, and the events the drain loops delivered per second of their time (docs/DESIGN.md,")
	fmt.Fprintln(w, "\"How delivery scales with the cores\").")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | shards | busiest drain loop, % of a core | its % of all wake-ups | events per drain-loop ms |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	pct := func(x float64) string { return fmt.Sprintf("%.0f", 100*x) }
	perMs := func(x float64) string { return fmt.Sprintf("%.0f", x/1e3) }
	for _, name := range names {
		cell := func(key string, f func(float64) string) string {
			s, ok := rep.deliveryStat(name, key)
			if !ok {
				return ""
			}
			return fmt.Sprintf("%s (%s–%s)", f(s.Med), f(s.Min), f(s.Max))
		}
		shards, _ := rep.deliveryStat(name, "shards")
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s |\n", name, shards.Med,
			cell("drain_busiest_core", pct), cell("drain_busiest_wakeups", pct), cell("drain_events_per_cpu_s", perMs))
	}
}

func (rep *report) writeJSON(name string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}
