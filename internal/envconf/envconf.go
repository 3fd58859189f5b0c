// Package envconf gives every gatenet environment variable's error one
// shape, so that a mistyped GATENET_POLLER, GATENET_SHARDS or
// GATENET_FAULTS reads the same whichever constructor reports it, and
// lists the GATENET_ variables, so that a mistyped name (GATENET_POLER)
// is an error of the same shape rather than a setting that never applies.
package envconf

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Error is an environment variable whose value gatenet cannot use. Every
// constructor that returns an error returns it (wrapped by the caller's
// usual shape, if any) while the variable stays invalid.
type Error struct {
	Var   string // the variable, e.g. "GATENET_POLLER"
	Value string // its value, as read
	Want  string // the valid syntax, for the reader to fix it
	Err   error  // what is wrong with Value
}

func (e *Error) Error() string {
	s := "gatenet: invalid " + e.Var + "=" + strconv.Quote(e.Value)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + " (want " + e.Want + ")"
}

func (e *Error) Unwrap() error { return e.Err }

// Library is the variables gatenet itself reads, the README's
// "Environment" table.
var Library = []string{"GATENET_POLLER", "GATENET_SHARDS", "GATENET_FAULTS"}

// Tests is the variables gatenet's own tests, benchmarks and examples
// read (the soaks and measurements of docs/TESTING.md, and those a test
// sets for the child process it runs), where they read them. Setting one
// changes nothing in a program that is not that test, but is no mistake.
var Tests = []string{
	"GATENET_SOAK",               // reliability/main_test.go
	"GATENET_NETEM",              // reliability/netem_test.go
	"GATENET_NETEM_SEED",         // reliability/tunlink_test.go
	"GATENET_SIGNAL_CHILD",       // reliability/signals_test.go
	"GATENET_SIGNAL_WANT",        // reliability/signals_test.go
	"GATENET_EMFILE_CHILD",       // reliability/faults_test.go, pipe_test.go
	"GATENET_IDLE",               // idle_mem_test.go
	"GATENET_IDLE_CONNS",         // idle_mem_test.go
	"GATENET_IDLE_PROFILE",       // idle_mem_test.go
	"GATENET_IDLE_DEPTH",         // idle_mem_test.go
	"GATENET_IDLE_CHILD",         // idle_mem_test.go
	"GATENET_IDLE_OUT",           // idle_mem_test.go
	"GATENET_IDLE_INPROC",        // idle_mem_test.go
	"GATENET_WRK",                // httptest/bench_test.go
	"GATENET_UDP_SENDS",          // pollfd/kernel_udp_test.go
	"GATENET_BENCH_PIPESIZE",     // internal/benchharness/pipe.go
	"GATENET_ENV_CHILD",          // env_test.go, pollfd/env_test.go
	"GATENET_FAULTS_CHILD",       // faults_attach_test.go
	"GATENET_SYNCTEST_CHILD",     // synctest_edges_test.go
	"GATENET_TEST_CHILD",         // pipe_exec_test.go
	"GATENET_TEST_SIGPIPE_CHILD", // file_newfile_test.go
	"GATENET_EXAMPLE_CHILD",      // examples/exec
}

// unknownWant is what an unknown variable's Error wants instead.
const unknownWant = "GATENET_POLLER, GATENET_SHARDS or GATENET_FAULTS; test-only ones: docs/TESTING.md"

// Unknown returns an *Error for the first variable, by name, of environ
// (os.Environ's NAME=value form) named GATENET_… that is neither in
// Library nor in Tests, whatever its value, or nil if there is none.
func Unknown(environ []string) error {
	var unknown []string
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "GATENET_") {
			continue
		}
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(Library, name) && !slices.Contains(Tests, name) {
			unknown = append(unknown, kv)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	name, value, _ := strings.Cut(unknown[0], "=")
	why := "gatenet reads no such variable"
	if like := closest(name); like != "" {
		why += "; did you mean " + like + "?"
	}
	return &Error{Var: name, Value: value, Want: unknownWant, Err: errors.New(why)}
}

// closest is the known variable within two edits of name, the library's
// first, or "".
func closest(name string) string {
	best, dist := "", 3
	for _, known := range slices.Concat(Library, Tests) {
		if d := editDistance(name, known); d < dist {
			best, dist = known, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
