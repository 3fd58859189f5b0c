//go:build linux

package main

// The "limit" column: csrc/climit.c (kept out of this directory, where a .c
// file would make the go command want cgo), compiled at run time with the system's C
// compiler (no cgo), run by a child round of kind "c".

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

//go:embed csrc/climit.c
var climitSource []byte

// climitEnv passes the compiled program's path from the parent to the
// children.
const climitEnv = "GATEBENCH_CLIMIT"

// buildCLimit compiles climit.c with cc -O2 into dir and returns the
// program's path; an error says why there is none (no compiler, or it
// failed).
func buildCLimit(dir string) (string, error) {
	var cc string
	for _, name := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		return "", errors.New("no C compiler (cc, gcc or clang) on PATH")
	}
	src := filepath.Join(dir, "climit.c")
	exe := filepath.Join(dir, "climit")
	if err := os.WriteFile(src, climitSource, 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command(cc, "-O2", "-o", exe, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s -O2 climit.c: %v\n%s", cc, err, out)
	}
	return exe, nil
}

// runCLimit runs the compiled program for one round of mode.
func runCLimit(mode string, size int, duration time.Duration) (result, error) {
	exe := os.Getenv(climitEnv)
	if exe == "" {
		return result{}, errors.New(climitEnv + " is not set: the parent builds the C limit")
	}
	if mode != "pingpong" && mode != "bulk" {
		return result{}, fmt.Errorf("no C limit for %s", mode)
	}
	ms := fmt.Sprint(max(1, duration.Milliseconds()))
	out, err := exec.Command(exe, mode, fmt.Sprint(size), ms).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return result{}, fmt.Errorf("climit: %w", err)
	}
	var r result
	if _, err := fmt.Sscan(string(out), &r.Ops, &r.Bytes, &r.Seconds, &r.CPUNanos); err != nil {
		return result{}, fmt.Errorf("climit output %q: %v", out, err)
	}
	return r, nil
}
