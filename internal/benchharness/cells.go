//go:build linux

package benchharness

import (
	"fmt"
	"os"
	"strings"
)

// The table cells and header facts the benchmark tools share (cmd/* and
// the tools/ modules, which import this package by its path).

// LoadAvg is /proc/loadavg's 1, 5 and 15 minute averages, "?" where it
// cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// RatioCell is a ratio's median with its range: "1.26 (1.09–1.48)".
func RatioCell(s Stat) string { return fmt.Sprintf("%.2f (%.2f–%.2f)", s.Med, s.Min, s.Max) }

// PerRound is xs as ratios, space-separated, in round order.
func PerRound(xs []float64) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.2f", x)
	}
	return b.String()
}

// StatCell is s as "median (min–max)", each figure in format.
func StatCell(s Stat, format func(float64) string) string {
	return fmt.Sprintf("%s (%s–%s)", format(s.Med), format(s.Min), format(s.Max))
}

// MetricName is a metric's name as a table heads it: marked ↓ when lower
// is better.
func MetricName(name string, lowerIsBetter bool) string {
	if lowerIsBetter {
		return name + " ↓"
	}
	return name
}
