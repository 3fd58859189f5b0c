//go:build linux

package main

// The report: a row per figure with each socket kind's median and range
// over the rounds and gatenet's ratio to net in every round, what quic-go
// enabled on each side, and what it logged, printed as markdown and
// written as JSON. The last line is the headline ratio.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// metric is one figure of a round.
type metric struct {
	name   string
	lower  bool // lower is better
	value  func(result) float64
	format func(float64) string
}

// perMB is a side's count per MB.
func perMB(side func(result) int64) func(result) float64 {
	return func(r result) float64 { return float64(side(r)) / r.mb() }
}

// metrics are the figures, the headline first.
var metrics = []metric{
	{"MB/s", false, result.mbps, benchharness.Fixed(1)},
	{"CPU ms/MB", true, result.cpuPerMB, benchharness.Fixed(2)},
	{"syscalls/MB", true, result.syscallsPerMB, benchharness.Fixed(1)},
	{"server recv calls/MB", true, perMB(func(r result) int64 { return r.Server.Recv }), benchharness.Fixed(1)},
	{"server send calls/MB", true, perMB(func(r result) int64 { return r.Server.Send }), benchharness.Fixed(1)},
	{"client recv calls/MB", true, perMB(func(r result) int64 { return r.Client.Recv }), benchharness.Fixed(1)},
	{"client send calls/MB", true, perMB(func(r result) int64 { return r.Client.Send }), benchharness.Fixed(1)},
	{"datagrams sent/MB", false, perMB(func(r result) int64 { return r.Server.SendDgram + r.Client.SendDgram }), benchharness.Fixed(1)},
	{"client datagrams per send", false, func(r result) float64 {
		return float64(r.Client.SendDgram) / float64(max(r.Client.Send, 1))
	}, benchharness.Fixed(2)},
	{"voluntary ctx switches/MB", true, perMB(func(r result) int64 { return r.VolCtx }), benchharness.Fixed(1)},
}

// ratios is gatenet's figure over net's.
type ratios struct {
	PerRound  []float64 `json:"per_round"`  // round by round
	Stat      stat      `json:"stat"`       // their median and range
	OfMedians float64   `json:"of_medians"` // gatenet's median over net's
}

type row struct {
	Metric        string               `json:"metric"`
	LowerIsBetter bool                 `json:"lower_is_better,omitempty"`
	Values        map[string][]float64 `json:"values"` // socket kind → rounds in order
	Stats         map[string]stat      `json:"stats"`
	GatenetVsNet  ratios               `json:"gatenet_vs_net"`

	format func(float64) string
}

// optRow is what quic-go enabled on one side of one socket kind, with
// how much of the measured part's sending used GSO and ECN marks.
type optRow struct {
	Conn      string   `json:"conn"`
	Side      string   `json:"side"`
	Opts      sideOpts `json:"opts"`
	Varies    bool     `json:"varies,omitempty"` // the rounds disagreed; Opts is round 1's
	Sends     int64    `json:"sends"`            // send calls in the measured parts of all rounds
	GSOSends  int64    `json:"gso_sends"`
	ECNSends  int64    `json:"ecn_sends"`
	Datagrams int64    `json:"datagrams"`
}

type report struct {
	Command    string              `json:"command"`
	Machine    string              `json:"machine"`
	LoadAvg    []string            `json:"loadavg"` // at the start and at the end
	Rounds     int                 `json:"rounds"`
	Size       int64               `json:"size"`
	Warm       int64               `json:"warm"`
	Conns      []string            `json:"conns"`
	Elapsed    string              `json:"elapsed"`
	Rows       []row               `json:"rows"`
	Opts       []optRow            `json:"opts"`
	PerfEvents []string            `json:"perf_events,omitempty"`
	ProbeSize  int64               `json:"probe_size,omitempty"`
	Probe      map[string]probeLog `json:"probe,omitempty"`  // socket kind → quic-go's debug lines
	Stderr     map[string][]string `json:"stderr,omitempty"` // socket kind → what timed children wrote on stderr
	Headline   float64             `json:"headline"`         // the median of the per-round throughput ratios
	Results    []result            `json:"results"`          // every round, in the order run
}

func ratiosOf(g, n []float64) ratios {
	per := make([]float64, len(g))
	for i := range g {
		per[i] = g[i] / n[i]
	}
	return ratios{PerRound: per, Stat: summarize(per), OfMedians: summarize(g).Med / summarize(n).Med}
}

func (rep *report) addRow(m metric, byConn map[string][]result) {
	r := row{
		Metric:        m.name,
		LowerIsBetter: m.lower,
		Values:        map[string][]float64{},
		Stats:         map[string]stat{},
		format:        m.format,
	}
	for _, kind := range connNames {
		for _, res := range byConn[kind] {
			r.Values[kind] = append(r.Values[kind], m.value(res))
		}
		r.Stats[kind] = summarize(r.Values[kind])
	}
	r.GatenetVsNet = ratiosOf(r.Values[connGatenet], r.Values[connNet])
	if len(rep.Rows) == 0 {
		rep.Headline = r.GatenetVsNet.Stat.Med
	}
	rep.Rows = append(rep.Rows, r)
}

func (rep *report) addOpts(byConn map[string][]result) {
	for _, kind := range connNames {
		for _, side := range []string{"server", "client"} {
			o := optRow{Conn: kind, Side: side}
			for i, res := range byConn[kind] {
				opts, c := res.ServerOpts, res.Server
				if side == "client" {
					opts, c = res.ClientOpts, res.Client
				}
				if i == 0 {
					o.Opts = opts
				} else if opts != o.Opts {
					o.Varies = true
				}
				o.Sends += c.Send
				o.GSOSends += c.GSOSends
				o.ECNSends += c.ECNSends
				o.Datagrams += c.SendDgram
			}
			rep.Opts = append(rep.Opts, o)
		}
	}
}

func (r row) metric() string { return benchharness.MetricName(r.Metric, r.LowerIsBetter) }

func (r row) cell(s stat) string { return benchharness.StatCell(s, r.format) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func percent(part, whole int64) string {
	if whole == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
}

// print writes the tables and what they mean; its last line is the
// headline.
func (rep *report) print(w io.Writer) {
	fmt.Fprintf(w, "\n## Medians of %d rounds (min–max)\n\n", rep.Rounds)
	fmt.Fprintln(w, "| metric | net | gatenet | gatenet/net |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.metric(),
			r.cell(r.Stats[connNet]), r.cell(r.Stats[connGatenet]), benchharness.RatioCell(r.GatenetVsNet.Stat))
	}
	fmt.Fprintf(w, "\n## gatenet/net round by round, and the ratio of the medians\n\n")
	fmt.Fprintln(w, "| metric | per round | of medians |")
	fmt.Fprintln(w, "|---|---|---:|")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "| %s | %s | %.2f |\n", r.metric(), benchharness.PerRound(r.GatenetVsNet.PerRound), r.GatenetVsNet.OfMedians)
	}

	fmt.Fprintf(w, "\n## What quic-go enabled on each side (determined directly; GSO and ECN use over the measured parts of all rounds)\n\n")
	fmt.Fprintln(w, "| socket | side | OOB | batch read | GSO | sends with GSO | datagrams per send | ECN | sends ECN-marked | rcvbuf / sndbuf |")
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---:|---|---:|---|")
	for _, o := range rep.Opts {
		varies := ""
		if o.Varies {
			varies = " (round 1's; rounds differ)"
		}
		dps := "–"
		if o.Sends > 0 {
			dps = fmt.Sprintf("%.2f", float64(o.Datagrams)/float64(o.Sends))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d KiB%s |\n", o.Conn, o.Side,
			yesNo(o.Opts.OOB), o.Opts.Batch, yesNo(o.Opts.GSO), percent(o.GSOSends, o.Sends), dps,
			yesNo(o.Opts.ECN), percent(o.ECNSends, o.Sends), o.Opts.RcvBuf>>10, o.Opts.SndBuf>>10, varies)
	}

	if rep.ProbeSize > 0 {
		fmt.Fprintf(w, "\n## What quic-go logged (QUIC_GO_LOG_LEVEL=debug, one untimed child of %s per socket kind; packet and frame lines left out)\n\n", mib(rep.ProbeSize))
		var disabled []string
		for _, kind := range rep.Conns {
			p := rep.Probe[kind]
			for _, part := range []struct {
				name  string
				lines []string
			}{{"server socket", p.Server}, {"client socket", p.Client}, {"connection", p.Connection}} {
				text := "(nothing)"
				if len(part.lines) > 0 {
					text = strings.Join(part.lines, "; ")
				}
				fmt.Fprintf(w, "- %s, %s: %s\n", kind, part.name, text)
				for _, l := range part.lines {
					if isDisabling(l) {
						disabled = append(disabled, kind+", "+part.name+": "+l)
					}
				}
			}
		}
		if len(disabled) == 0 {
			fmt.Fprintln(w, "\nquic-go logged no optimisation disabled or failed on either side.")
		} else {
			fmt.Fprintln(w, "\nquic-go logged, disabling or failing:")
			for _, l := range disabled {
				fmt.Fprintf(w, "- %s\n", l)
			}
		}
	}
	for _, kind := range rep.Conns {
		if lines := rep.Stderr[kind]; len(lines) > 0 {
			fmt.Fprintf(w, "\nThe timed %s children wrote on stderr:\n", kind)
			for _, l := range lines {
				fmt.Fprintf(w, "- %s\n", l)
			}
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "↓: lower is better (for the others, higher is, or neither). gatenet/net in the first table: the median",
		"(min–max) of the per-round ratios. MB = 10^6 bytes, of the stream, counted from the end of the warm-up to the last byte read.",
		"CPU: the whole process's (server and client), user and system.",
		"syscalls: both sides' data-path system call attempts, counted by a wrapper around each socket",
		"(recvmmsg through SyscallConn, EAGAIN attempts included; one per ReadBatch, ReadMsgUDP, ReadFrom, WriteMsgUDP, WriteTo call);",
		"epoll, futex and other runtime calls not counted there.")
	if len(rep.PerfEvents) > 0 {
		fmt.Fprintln(w, "perf: counted by perf stat in the kernel over the whole child (set-up, handshake and warm-up included; all threads),",
			"per MB of the whole transfer; recv* is recvmmsg, recvmsg, recvfrom; send* sendmsg, sendmmsg, sendto.")
	}
	fmt.Fprintf(w, "Load average at the end: %s. The run took %s.\n", rep.LoadAvg[len(rep.LoadAvg)-1], rep.Elapsed)
	fmt.Fprintf(w, "quic-go bulk gatenet/net %.2f\n", rep.Headline)
}

// isDisabling tells a log line that reports an optimisation off or failed.
func isDisabling(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "disabl") || strings.Contains(l, "fail") || strings.Contains(l, "not a net.udpconn")
}

func (rep *report) writeJSON(name string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(name, append(b, '\n'), 0o644)
}
