//go:build linux

package main

// The report: a row per figure with each server's median and range over
// the rounds, the ReadyQueue's ratio to gnet and to nbio in every round
// with their median and range, printed as markdown and written as JSON.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// metric is one figure of a workload.
type metric struct {
	name   string
	lower  bool // lower is better
	value  func(result) float64
	format func(float64) string
}

// ratios is the ReadyQueue's figure over another server's.
type ratios struct {
	PerRound  []float64 `json:"per_round"`  // round by round
	Stat      stat      `json:"stat"`       // their median and range
	OfMedians float64   `json:"of_medians"` // the ReadyQueue's median over the other's
}

type row struct {
	Workload      string               `json:"workload"`
	Metric        string               `json:"metric"`
	LowerIsBetter bool                 `json:"lower_is_better,omitempty"`
	Values        map[string][]float64 `json:"values"` // server → rounds in order
	Stats         map[string]stat      `json:"stats"`
	VsGnet        ratios               `json:"readyqueue_vs_gnet"`
	VsNbio        ratios               `json:"readyqueue_vs_nbio"`

	format func(float64) string
}

type report struct {
	Command  string   `json:"command"`
	Machine  string   `json:"machine"`
	LoadAvg  []string `json:"loadavg"` // at the start and at the end
	Rounds   int      `json:"rounds"`
	Duration string   `json:"duration"`
	TCPCC    string   `json:"tcp_congestion"` // every socket's congestion control
	ReadBuf  int      `json:"read_buf"`
	Servers  []string `json:"servers"`
	Elapsed  string   `json:"elapsed"`
	Rows     []row    `json:"rows"`
	Results  []result `json:"results"` // every round, in the order run
}

func ratiosOf(rq, other []float64) ratios {
	per := make([]float64, len(rq))
	for i := range rq {
		per[i] = rq[i] / other[i]
	}
	return ratios{PerRound: per, Stat: summarize(per), OfMedians: summarize(rq).Med / summarize(other).Med}
}

func (rep *report) addRow(w workload, m metric, byServer map[string][]result) {
	r := row{
		Workload:      w.name,
		Metric:        m.name,
		LowerIsBetter: m.lower,
		Values:        map[string][]float64{},
		Stats:         map[string]stat{},
		format:        m.format,
	}
	for _, srv := range serverNames {
		for _, res := range byServer[srv] {
			r.Values[srv] = append(r.Values[srv], m.value(res))
		}
		r.Stats[srv] = summarize(r.Values[srv])
	}
	rq := r.Values[serverReadyQueue]
	r.VsGnet = ratiosOf(rq, r.Values[serverGnet])
	r.VsNbio = ratiosOf(rq, r.Values[serverNbio])
	rep.Rows = append(rep.Rows, r)
}

func (r row) metric() string { return benchharness.MetricName(r.Metric, r.LowerIsBetter) }

func (r row) cell(s stat) string { return benchharness.StatCell(s, r.format) }

// print writes the two markdown tables and what they mean.
func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n## Medians of %d rounds (min–max); RQ = the ReadyQueue server\n\n", rep.Rounds)
	fmt.Fprintln(w, "| workload | metric | gnet | nbio | ReadyQueue | RQ/gnet | RQ/nbio |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Workload, r.metric(),
			r.cell(r.Stats[serverGnet]), r.cell(r.Stats[serverNbio]), r.cell(r.Stats[serverReadyQueue]),
			benchharness.RatioCell(r.VsGnet.Stat), benchharness.RatioCell(r.VsNbio.Stat))
	}
	fmt.Fprintf(w, "\n## The ratios round by round, and the ratio of the medians\n\n")
	fmt.Fprintln(w, "| workload | metric | RQ/gnet per round | RQ/gnet of medians | RQ/nbio per round | RQ/nbio of medians |")
	fmt.Fprintln(w, "|---|---|---|---:|---|---:|")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %.2f | %s | %.2f |\n", r.Workload, r.metric(),
			benchharness.PerRound(r.VsGnet.PerRound), r.VsGnet.OfMedians, benchharness.PerRound(r.VsNbio.PerRound), r.VsNbio.OfMedians)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "↓: lower is better (for the others, higher is). RQ/gnet and RQ/nbio in the first table: the median",
		"(min–max) of the per-round ratios; above 1 the ReadyQueue's figure is the higher.")
	fmt.Fprintln(w, "Clients: the standard library's net, in the same process as the server, except idle's (in the parent)",
		"and bulk-apart's (in a child process of their own).",
		"idle: HeapInuse+StackInuse after a GC per connection the server holds.",
		"CPU: the whole process's (the clients' included), user and system, over the measured part;",
		"bulk-apart's: the server's process's and the clients' process's, each alone.")
	fmt.Fprintf(w, "Load average at the end: %s. The run took %s.\n", rep.LoadAvg[len(rep.LoadAvg)-1], rep.Elapsed)
}

func (rep *report) writeJSON(name string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}
