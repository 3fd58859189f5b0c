//go:build linux

// Command pipebench compares gatenet.Pipe with os.Pipe, under every poller
// strategy, without `go test`.
//
// Each measurement round runs in a fresh child process (this binary
// re-executed with a hidden -child flag) whose default poller is chosen by
// the GATENET_POLLER environment variable, so every round starts from the
// same cold state and no strategy inherits another's threads, heap or
// timers. Rounds alternate between the contenders (os, dedicated,
// dedicated+harvest, nested, nested+harvest, os, dedicated, …) so that
// drift in the machine's load spreads over all of them instead of landing
// on one. The parent prints a markdown table of medians with min–max and
// the ratio to os.
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
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/pollfd"
)

// contenders, in the order each round runs them. "os" is os.Pipe; the
// others are GATENET_POLLER values for gatenet.Pipe's default poller.
var contenders = []string{
	"os",
	pollfd.Options{Strategy: pollfd.Dedicated}.String(),
	pollfd.Options{Strategy: pollfd.Dedicated, Harvest: true}.String(),
	pollfd.Options{Strategy: pollfd.Nested}.String(),
	pollfd.Options{Strategy: pollfd.Nested, Harvest: true}.String(),
}

const bulkChunk = 64 << 10

// result is what a child prints on stdout, as JSON.
type result struct {
	Kind     string  `json:"kind"`   // "os" or the poller's Options.String()
	Mode     string  `json:"mode"`   // "pingpong" or "bulk"
	Size     int     `json:"size"`   // message size (pingpong) or write size (bulk)
	Ops      int64   `json:"ops"`    // round trips or writes
	Bytes    int64   `json:"bytes"`  // bytes received by the reader (bulk)
	Seconds  float64 `json:"secs"`   // wall time of the measured part
	CPUNanos int64   `json:"cpu_ns"` // user+system CPU time of the measured part
}

func main() {
	rounds := flag.Int("rounds", 5, "measurement rounds per contender")
	duration := flag.Duration("duration", time.Second, "length of one round")
	child := flag.String("child", "", "internal: run one round in this process (pingpong or bulk)")
	kind := flag.String("kind", "", "internal: os or gatenet")
	size := flag.Int("size", 1, "internal: message size")
	flag.Parse()

	if *child != "" {
		if err := runChild(*child, *kind, *size, *duration); err != nil {
			fmt.Fprintf(os.Stderr, "pipebench child: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *rounds < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "pipebench: -rounds must be ≥ 1 and -duration > 0")
		os.Exit(2)
	}
	if err := runParent(*rounds, *duration); err != nil {
		fmt.Fprintf(os.Stderr, "pipebench: %v\n", err)
		os.Exit(1)
	}
}

// ---- parent ----

func runParent(rounds int, duration time.Duration) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	header()
	fmt.Printf("%d round(s) of %v per contender, interleaved (%s), each in a fresh process.\n\n",
		rounds, duration, strings.Join(contenders, ", "))

	for _, size := range []int{1, 4096} {
		res, err := collect(exe, "pingpong", size, rounds, duration)
		if err != nil {
			return err
		}
		pingPongTable(size, res)
	}
	res, err := collect(exe, "bulk", bulkChunk, rounds, duration)
	if err != nil {
		return err
	}
	bulkTable(res)
	return nil
}

func header() {
	var u unix.Utsname
	kernel := "?"
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	fmt.Printf("# gatenet.Pipe vs os.Pipe\n\n")
	fmt.Printf("%s %s/%s, %d CPUs, GOMAXPROCS %d, Linux %s.\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), kernel)
}

// collect runs rounds × contenders children, alternating contenders within
// each round, and returns the results per contender.
func collect(exe, mode string, size, rounds int, duration time.Duration) (map[string][]result, error) {
	out := map[string][]result{}
	tty := isTerminal(os.Stderr)
	if !tty {
		fmt.Fprintf(os.Stderr, "pipebench: running %s size=%d\n", mode, size)
	}
	for round := 1; round <= rounds; round++ {
		for _, c := range contenders {
			if tty {
				fmt.Fprintf(os.Stderr, "\r%s size=%d round %d/%d: %-18s", mode, size, round, rounds, c)
			}
			r, err := runOne(exe, mode, c, size, duration)
			if err != nil {
				if tty {
					fmt.Fprintln(os.Stderr)
				}
				return nil, fmt.Errorf("%s size=%d %s round %d: %w", mode, size, c, round, err)
			}
			out[c] = append(out[c], r)
		}
	}
	if tty {
		fmt.Fprintf(os.Stderr, "\r%-60s\r", "")
	}
	return out, nil
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func runOne(exe, mode, contender string, size int, duration time.Duration) (result, error) {
	kind := "gatenet"
	if contender == "os" {
		kind = "os"
	}
	cmd := exec.Command(exe, "-child", mode, "-kind", kind,
		"-size", fmt.Sprint(size), "-duration", duration.String())
	env := slices.DeleteFunc(os.Environ(), func(s string) bool {
		return strings.HasPrefix(s, "GATENET_POLLER=")
	})
	if kind == "gatenet" {
		env = append(env, "GATENET_POLLER="+contender)
	}
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var r result
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return result{}, fmt.Errorf("child output %q: %v", stdout.String(), err)
	}
	// The default poller ignores a GATENET_POLLER it cannot parse: make
	// sure the child really ran the strategy asked for.
	if r.Kind != contender {
		return result{}, fmt.Errorf("child ran %q, want %q", r.Kind, contender)
	}
	if r.Ops == 0 || r.Seconds <= 0 {
		return result{}, fmt.Errorf("child measured nothing: %+v", r)
	}
	return r, nil
}

// stat is a median with its range.
type stat struct{ med, min, max float64 }

func summarize(xs []float64) stat {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stat{med, s[0], s[n-1]}
}

func statOf(rs []result, f func(result) float64) stat {
	xs := make([]float64, len(rs))
	for i, r := range rs {
		xs[i] = f(r)
	}
	return summarize(xs)
}

func pingPongTable(size int, res map[string][]result) {
	rate := func(r result) float64 { return float64(r.Ops) / r.Seconds }
	cpu := func(r result) float64 { return float64(r.CPUNanos) / float64(r.Ops) / 1e3 } // µs
	osRate, osCPU := statOf(res["os"], rate), statOf(res["os"], cpu)

	fmt.Printf("\n## Ping-pong, %d-byte messages\n\n", size)
	fmt.Println("| pipe | round trips/s, median (min–max) | vs os | CPU µs/round trip, median (min–max) | vs os |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, c := range contenders {
		r, u := statOf(res[c], rate), statOf(res[c], cpu)
		fmt.Printf("| %s | %s (%s–%s) | %.2f | %.2f (%.2f–%.2f) | %.2f |\n", c,
			kilo(r.med), kilo(r.min), kilo(r.max), r.med/osRate.med,
			u.med, u.min, u.max, u.med/osCPU.med)
	}
}

func bulkTable(res map[string][]result) {
	mbps := func(r result) float64 { return float64(r.Bytes) / r.Seconds / 1e6 }
	cpu := func(r result) float64 { return float64(r.CPUNanos) / (float64(r.Bytes) / 1e6) / 1e3 } // µs per MB
	osRate, osCPU := statOf(res["os"], mbps), statOf(res["os"], cpu)

	fmt.Printf("\n## Bulk, 64 KiB writes through one pipe\n\n")
	fmt.Println("| pipe | MB/s, median (min–max) | vs os | CPU µs/MB, median (min–max) | vs os |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, c := range contenders {
		r, u := statOf(res[c], mbps), statOf(res[c], cpu)
		fmt.Printf("| %s | %.0f (%.0f–%.0f) | %.2f | %.0f (%.0f–%.0f) | %.2f |\n", c,
			r.med, r.min, r.max, r.med/osRate.med,
			u.med, u.min, u.max, u.med/osCPU.med)
	}
}

// kilo formats a rate as "123.4k".
func kilo(x float64) string { return fmt.Sprintf("%.1fk", x/1e3) }

// ---- child ----

type pipeEnd interface {
	io.Reader
	io.Writer
	io.Closer
}

func newPipe(kind string) (r, w pipeEnd, err error) {
	switch kind {
	case "os":
		return os.Pipe()
	case "gatenet":
		return gatenet.Pipe()
	}
	return nil, nil, fmt.Errorf("unknown -kind %q", kind)
}

func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func runChild(mode, kind string, size int, duration time.Duration) error {
	if size < 1 {
		return fmt.Errorf("-size %d", size)
	}
	r := result{Kind: "os", Mode: mode, Size: size}
	var err error
	switch mode {
	case "pingpong":
		err = pingPong(&r, kind, size, duration)
	case "bulk":
		err = bulk(&r, kind, size, duration)
	default:
		err = fmt.Errorf("unknown -child %q", mode)
	}
	if err != nil {
		return err
	}
	if kind == "gatenet" {
		r.Kind = pollfd.Default().Options().String()
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// closeAll closes ends, ignoring ends already closed.
func closeAll(ends ...pipeEnd) error {
	var errs []error
	for _, e := range ends {
		if err := e.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkEvery is how many iterations run between clock reads.
const checkEvery = 64

func pingPong(res *result, kind string, size int, duration time.Duration) error {
	aR, aW, err := newPipe(kind)
	if err != nil {
		return err
	}
	bR, bW, err := newPipe(kind)
	if err != nil {
		closeAll(aR, aW)
		return err
	}
	echoDone := make(chan error, 1)
	go func() {
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(aR, buf); err != nil {
				if err == io.EOF {
					err = nil
				}
				echoDone <- err
				return
			}
			if _, err := bW.Write(buf); err != nil {
				echoDone <- err
				return
			}
		}
	}()

	msg := make([]byte, size)
	reply := make([]byte, size)
	roundTrip := func() error {
		if _, err := aW.Write(msg); err != nil {
			return err
		}
		_, err := io.ReadFull(bR, reply)
		return err
	}

	// Warm up (threads started, poller and stacks grown), then measure.
	var loopErr error
	for range 1000 {
		if loopErr = roundTrip(); loopErr != nil {
			break
		}
	}
	var n int64
	cpu0, t0 := cpuNanos(), time.Now()
	end := t0.Add(duration)
	for loopErr == nil {
		for range checkEvery {
			if loopErr = roundTrip(); loopErr != nil {
				break
			}
			n++
		}
		if !time.Now().Before(end) {
			break
		}
	}
	elapsed, cpu1 := time.Since(t0), cpuNanos()

	aW.Close()
	echoErr := <-echoDone
	closeErr := closeAll(aR, aW, bR, bW)
	if err := errors.Join(loopErr, echoErr, closeErr); err != nil {
		return err
	}
	res.Ops, res.Bytes = n, n*int64(size)
	res.Seconds, res.CPUNanos = elapsed.Seconds(), cpu1-cpu0
	return nil
}

func bulk(res *result, kind string, size int, duration time.Duration) error {
	r, w, err := newPipe(kind)
	if err != nil {
		return err
	}
	type got struct {
		n   int64
		err error
	}
	readDone := make(chan got, 1)
	go func() {
		buf := make([]byte, size)
		var total int64
		for {
			m, err := r.Read(buf)
			total += int64(m)
			if err != nil {
				if err == io.EOF {
					err = nil
				}
				readDone <- got{total, err}
				return
			}
		}
	}()

	chunk := make([]byte, size)
	var loopErr error
	const warm = 256
	for range warm {
		if _, loopErr = w.Write(chunk); loopErr != nil {
			break
		}
	}
	var n int64
	cpu0, t0 := cpuNanos(), time.Now()
	end := t0.Add(duration)
	for loopErr == nil {
		for range checkEvery {
			if _, loopErr = w.Write(chunk); loopErr != nil {
				break
			}
			n++
		}
		if !time.Now().Before(end) {
			break
		}
	}
	w.Close()
	g := <-readDone // the tail still in the pipe counts
	elapsed, cpu1 := time.Since(t0), cpuNanos()
	closeErr := closeAll(r, w)
	if err := errors.Join(loopErr, g.err, closeErr); err != nil {
		return err
	}
	// The timed part counts the bytes written in it; up to a pipe buffer
	// of warm-up data is read inside it too, balanced by the tail the
	// reader drains after the last write.
	if want := (int64(warm) + n) * int64(size); g.n != want {
		return fmt.Errorf("reader got %d bytes, want %d", g.n, want)
	}
	res.Ops, res.Bytes = n, n*int64(size)
	res.Seconds, res.CPUNanos = elapsed.Seconds(), cpu1-cpu0
	return nil
}
