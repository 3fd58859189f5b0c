//go:build linux

package testutil

import (
	"testing"
	"time"
)

// SlowMachineLimit bounds the doubling of a short deadline or timeout that
// a loaded machine (-race, every package's tests at once on two cores,
// where a goroutine can be descheduled for tens of milliseconds between
// two statements) let pass too early.
const SlowMachineLimit = 10 * time.Second

// RetrySlow calls try with d and, while try reports that d passed too
// early (before what, which had to happen within it: the machine was too
// slow, not the code wrong), logs it and calls try again with d doubled,
// as Go's own timeout tests retry with longer ones, until d reaches
// SlowMachineLimit. try works on fresh state or undoes what a too-slow
// attempt left; the caller asserts on what the last attempt saw, so that
// a failure that only looks like slowness still fails, only later.
func RetrySlow(t testing.TB, d time.Duration, what string, try func(d time.Duration) (tooSlow bool)) {
	t.Helper()
	for ; try(d) && d < SlowMachineLimit; d *= 2 {
		t.Logf("%v passed before %s; again with %v", d, what, 2*d)
	}
}
