//go:build linux

package main

// -perf: each timed child runs under perf stat, which counts its system
// calls in the kernel (the raw_syscalls:sys_enter tracepoint, and the
// syscalls:sys_enter_* ones of the calls that matter here), over the
// whole child: set-up, handshake and warm-up included, every thread. A
// check of the wrapper's counts that sees what the wrapper cannot: the
// retries inside a socket's own ReadBatch or WriteMsgUDP, and the
// poller's and the scheduler's calls (epoll, futex).

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// perfGroups are the counted system calls, by the name the report gives
// them; a group's calls that this kernel has no tracepoint for are left
// out.
var perfGroups = []struct {
	name  string
	calls []string
}{
	{"recv*", []string{"recvmmsg", "recvmsg", "recvfrom"}},
	{"send*", []string{"sendmsg", "sendmmsg", "sendto"}},
	{"epoll_*wait", []string{"epoll_wait", "epoll_pwait", "epoll_pwait2"}},
	{"futex", []string{"futex"}},
	{"read, write", []string{"read", "write"}}, // eventfd wake-ups, among others
}

const perfAll = "raw_syscalls:sys_enter"

// perfEvents returns the events perf can count here, perfAll first, or
// an error if perf cannot count even that.
func perfEvents() ([]string, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, errors.New("-perf: no perf on PATH")
	}
	try := func(ev string) error {
		out, err := exec.Command("perf", "stat", "-x,", "-e", ev, "--", "true").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if err := try(perfAll); err != nil {
		return nil, fmt.Errorf("-perf: perf stat cannot count %s: %w", perfAll, err)
	}
	evs := []string{perfAll}
	for _, g := range perfGroups {
		for _, c := range g.calls {
			if ev := "syscalls:sys_enter_" + c; try(ev) == nil {
				evs = append(evs, ev)
			}
		}
	}
	return evs, nil
}

// perfCommand is the command line that runs args under perf stat, its
// counts written to out.
func perfCommand(events []string, out string, args ...string) []string {
	return append([]string{"perf", "stat", "-x,", "-o", out, "-e", strings.Join(events, ","), "--"}, args...)
}

// readPerf reads perf stat -x, output: the count of each event.
func readPerf(name string) (map[string]int64, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for line := range strings.Lines(string(b)) {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue // "<not counted>", "<not supported>"
		}
		counts[f[2]] = n
	}
	if _, ok := counts[perfAll]; !ok {
		return nil, fmt.Errorf("perf stat counted no %s: %s", perfAll, strings.TrimSpace(string(b)))
	}
	return counts, nil
}

// perfTemp is a file name for one child's perf output.
func perfTemp() (string, func(), error) {
	dir, err := os.MkdirTemp("", "quicbench-perf")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(dir, "perf.csv"), func() { os.RemoveAll(dir) }, nil
}

// perfMetrics are the report's rows of -perf's counts, per MB of the
// whole transfer (-size, not only the measured part).
func perfMetrics() []metric {
	perMBAll := func(count func(map[string]int64) int64) func(result) float64 {
		return func(r result) float64 { return float64(count(r.Perf)) / (float64(r.Size) / 1e6) }
	}
	ms := []metric{{"perf: all syscalls/MB", true, perMBAll(func(p map[string]int64) int64 { return p[perfAll] }), benchharness.Fixed(1)}}
	for _, g := range perfGroups {
		ms = append(ms, metric{"perf: " + g.name + "/MB", true, perMBAll(func(p map[string]int64) int64 {
			var n int64
			for _, c := range g.calls {
				n += p["syscalls:sys_enter_"+c]
			}
			return n
		}), benchharness.Fixed(1)})
	}
	return ms
}
