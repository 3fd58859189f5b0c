//go:build linux

package testutil

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Exhaustion is a process with no descriptor free: RLIMIT_NOFILE lowered
// to a little above what was open, and the rest taken by dups of fd 0.
// Run it in a child process (RunChild): the limit is the process's.
type Exhaustion struct {
	dups []int
	old  unix.Rlimit
}

// ExhaustDescriptors lowers the limit and takes every descriptor left;
// t's cleanup gives them back and restores the limit (Release, earlier).
func ExhaustDescriptors(t testing.TB) *Exhaustion {
	t.Helper()
	e := new(Exhaustion)
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &e.old); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	lim := unix.Rlimit{Cur: uint64(OpenFDs(t) + 16), Max: e.old.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
	t.Cleanup(e.Release)
	for {
		fd, err := unix.Dup(0)
		if err == unix.EMFILE {
			break
		}
		if err != nil {
			t.Fatalf("dup: %v", err)
		}
		e.dups = append(e.dups, fd)
		if len(e.dups) >= 1<<16 {
			t.Fatalf("the limit of %d descriptors did not take", lim.Cur)
		}
	}
	t.Logf("limit %d: %d descriptors taken", lim.Cur, len(e.dups))
	return e
}

// Free gives n of the descriptors back.
func (e *Exhaustion) Free(n int) {
	for ; n > 0 && len(e.dups) > 0; n-- {
		unix.Close(e.dups[len(e.dups)-1])
		e.dups = e.dups[:len(e.dups)-1]
	}
}

// Release gives every descriptor back and restores the limit.
func (e *Exhaustion) Release() {
	e.Free(len(e.dups))
	unix.Setrlimit(unix.RLIMIT_NOFILE, &e.old)
}
