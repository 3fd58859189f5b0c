//go:build linux

package main

// -procs: every workload at several GOMAXPROCS values, and the curve of
// each ratio across them ("Cores" in docs/PERFORMANCE.md).

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// parseProcs reads -procs: "" (nil: the children run at the parent's
// GOMAXPROCS) or a comma-separated list of distinct positive integers.
func parseProcs(list string) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-procs %q: %q is not a positive integer", list, f)
		}
		if slices.Contains(out, n) {
			return nil, fmt.Errorf("-procs %q: %d twice", list, n)
		}
		out = append(out, n)
	}
	return out, nil
}

// printCores prints each figure's ratio gatenet/net at every GOMAXPROCS
// of reps (one report per value, in order), and the busiest drain loop's
// share of a core beside it.
func printCores(w io.Writer, reps []*report) {
	if len(reps) == 0 {
		return
	}
	type key struct{ workload, metric string }
	var keys []key
	ratio := map[key]map[int]float64{}
	for i, rep := range reps {
		for _, r := range rep.Rows {
			k := key{r.Workload, r.Metric}
			if r.LowerIsBetter {
				k.metric += " ↓"
			}
			if ratio[k] == nil {
				keys = append(keys, k)
				ratio[k] = map[int]float64{}
			}
			ratio[k][i] = r.Ratio
		}
	}
	fmt.Fprintf(w, "\n## Cores: gatenet/net by GOMAXPROCS (%s CPUs here)\n\n", cpusOf(reps[0].Machine))
	var head, rule strings.Builder
	head.WriteString("| workload | metric |")
	rule.WriteString("|---|---|")
	for _, rep := range reps {
		fmt.Fprintf(&head, " %d |", rep.GOMAXPROCS)
		rule.WriteString("---:|")
	}
	fmt.Fprintln(w, head.String())
	fmt.Fprintln(w, rule.String())
	for _, k := range keys {
		var row strings.Builder
		fmt.Fprintf(&row, "| %s | %s |", k.workload, k.metric)
		for i := range reps {
			if r, ok := ratio[k][i]; ok {
				fmt.Fprintf(&row, " %.2f |", r)
			} else {
				row.WriteString(" |")
			}
		}
		fmt.Fprintln(w, row.String())
	}
	for _, d := range []struct{ title, key, unit string }{
		{"busiest drain loop, share of a core", "drain_busiest_core", "%"},
		{"wake-ups the busiest drain loop delivered", "drain_busiest_wakeups", "%"},
		{"shards", "shards", ""},
	} {
		for _, workload := range deliveryWorkloads(reps[0]) {
			var row strings.Builder
			fmt.Fprintf(&row, "| %s | gatenet: %s |", workload, d.title)
			for _, rep := range reps {
				if s, ok := rep.deliveryStat(workload, d.key); ok {
					row.WriteString(" " + formatShare(s.Med, d.unit) + " |")
				} else {
					row.WriteString(" |")
				}
			}
			fmt.Fprintln(w, row.String())
		}
	}
}

// cpusOf is the CPU count in a Machine line ("…, 2 CPUs, …").
func cpusOf(machine string) string {
	for _, f := range strings.Split(machine, ", ") {
		if n, ok := strings.CutSuffix(f, " CPUs"); ok {
			return n
		}
	}
	return "?"
}

func formatShare(x float64, unit string) string {
	if unit == "%" {
		return fmt.Sprintf("%.0f%%", 100*x)
	}
	return fmt.Sprintf("%.0f", x)
}
