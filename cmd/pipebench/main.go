//go:build linux

// Command pipebench compares gatenet.Pipe with os.Pipe, under every poller
// strategy, without `go test`.
//
// Each measurement round runs in a fresh child process (this binary
// re-executed with a hidden -child flag) whose default poller is chosen by
// the GATENET_POLLER environment variable, so every round starts from the
// same cold state and no strategy inherits another's threads, heap or
// timers. Rounds alternate between the contenders (os, dedicated,
// dedicated+harvest, nested, nested+harvest, nested+harvest+rpark — the
// default —, os, dedicated, …) so that drift in the machine's load spreads
// over all of them instead of landing on one. The parent prints a markdown
// table of medians with min–max and the ratio to os. The machinery is
// internal/benchharness, shared with cmd/sockbench.
//
// Ping-pong: the child writes a message on pipe A, an echo goroutine reads
// it and writes it back on pipe B, the child reads it back; round trips per
// second and CPU time (getrusage(RUSAGE_SELF), user + system, all threads)
// per round trip. Bulk: 64 KiB writes streamed through one pipe to a reader
// goroutine that discards them; MB/s (10^6 bytes) and CPU per MB.
//
//	go run ./cmd/pipebench -rounds 5 -duration 1s
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

const bulkChunk = 64 << 10

type result = benchharness.Result

func main() {
	benchharness.Main(benchharness.Command{
		Name:     "pipebench",
		Baseline: "os",
		Modes:    []string{"pingpong", "bulk"},
		Parent:   runParent,
		Child:    runChild,
		Flags: func() {
			// The children inherit the environment: the flag travels as
			// benchharness.PipeSizeEnv.
			flag.Func("pipesize", "gatenet's pipe buffer in bytes (0: gatenet's default, negative: the kernel's)",
				func(s string) error {
					if _, err := strconv.Atoi(s); err != nil {
						return err
					}
					return os.Setenv(benchharness.PipeSizeEnv, s)
				})
		},
	})
}

// ---- parent ----

func runParent(h *benchharness.Harness) error {
	h.Header("gatenet.Pipe vs os.Pipe")
	size, err := benchharness.PipeSize()
	if err != nil {
		return err
	}
	switch {
	case size == 0:
		fmt.Printf("gatenet's pipes: PipeConfig{} (the default buffer).\n\n")
	default:
		fmt.Printf("gatenet's pipes: PipeConfig{Size: %d}.\n\n", size)
	}
	for _, size := range []int{1, 4096} {
		res, err := h.Collect("pingpong", size)
		if err != nil {
			return err
		}
		h.Table(fmt.Sprintf("Ping-pong, %d-byte messages", size), "pipe", res,
			benchharness.Metric{
				Header: "round trips/s",
				Value:  func(r result) float64 { return float64(r.Ops) / r.Seconds },
				Format: benchharness.Kilo,
			},
			benchharness.Metric{
				Header: "CPU µs/round trip",
				Value:  func(r result) float64 { return float64(r.CPUNanos) / float64(r.Ops) / 1e3 },
				Format: benchharness.Fixed(2),
			})
	}
	res, err := h.Collect("bulk", bulkChunk)
	if err != nil {
		return err
	}
	h.Table("Bulk, 64 KiB writes through one pipe", "pipe", res,
		benchharness.Metric{
			Header: "MB/s",
			Value:  func(r result) float64 { return float64(r.Bytes) / r.Seconds / 1e6 },
			Format: benchharness.Fixed(0),
		},
		benchharness.Metric{
			Header: "CPU µs/MB",
			Value:  func(r result) float64 { return float64(r.CPUNanos) / (float64(r.Bytes) / 1e6) / 1e3 },
			Format: benchharness.Fixed(0),
		})
	return nil
}

// ---- child ----

func runChild(mode, kind string, size int, duration time.Duration) (result, error) {
	if size < 1 {
		return result{}, fmt.Errorf("-size %d", size)
	}
	switch mode {
	case "pingpong":
		return benchharness.PipePingPong(kind, "os", size, duration)
	case "bulk":
		return bulk(kind, size, duration)
	}
	return result{}, fmt.Errorf("unknown -child %q", mode)
}

func bulk(kind string, size int, duration time.Duration) (result, error) {
	r, w, err := benchharness.NewPipe(kind, "os")
	if err != nil {
		return result{}, err
	}
	readDone := benchharness.Drain(r, size)

	chunk := make([]byte, size)
	write := func() error {
		_, err := w.Write(chunk)
		return err
	}
	const warm = 256
	n, meter, loopErr := benchharness.Run(warm, duration, write)
	w.Close()
	g := <-readDone // the tail still in the pipe counts
	elapsed, cpu := meter.Stop()
	closeErr := benchharness.CloseAll(r, w)
	if err := errors.Join(loopErr, g.Err, closeErr); err != nil {
		return result{}, err
	}
	// The timed part counts the bytes written in it; up to a pipe buffer
	// of warm-up data is read inside it too, balanced by the tail the
	// reader drains after the last write.
	if want := (int64(warm) + n) * int64(size); g.N != want {
		return result{}, fmt.Errorf("reader got %d bytes, want %d", g.N, want)
	}
	return result{Ops: n, Bytes: n * int64(size), Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}
