//go:build linux

package gatenet_test

// Benchmarks that put gatenet.Pipe next to os.Pipe in the same run, under
// every poller strategy (pollfd.Options), plus the hot-path allocation
// checks. The wait path is what differs between strategies (docs/DESIGN.md,
// "The hop, and why latency is the hard part"), so ping-pong reports CPU
// per round trip as well as round trips per second: a strategy that is fast
// only because it burns a second CPU shows it there.
//
// cmd/pipebench runs the same ping-pong as interleaved rounds in fresh
// processes, which is the fairer comparison on a noisy machine.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// pipeEnd is what the benchmarks need from either kind of pipe end.
type pipeEnd interface {
	io.Reader
	io.Writer
	io.Closer
}

// pipeKind makes a pipe of one kind: os.Pipe, or gatenet on a poller with
// the given options.
type pipeKind struct {
	name string
	opts *pollfd.Options // nil: os.Pipe
}

func pipeKinds() []pipeKind {
	kinds := []pipeKind{{name: "os"}}
	for _, o := range testutil.Strategies() {
		kinds = append(kinds, pipeKind{name: o.String(), opts: &o})
	}
	return kinds
}

// pipes is a set of pipes of one kind and, for gatenet, the poller they are
// registered with; close releases all of it.
type pipes struct {
	poller *pollfd.Poller
	ends   []pipeEnd
}

func newPipes(tb testing.TB, k pipeKind) *pipes {
	tb.Helper()
	ps := &pipes{}
	if k.opts != nil {
		p, err := pollfd.New(*k.opts)
		if err != nil {
			tb.Fatalf("pollfd.New(%v): %v", *k.opts, err)
		}
		ps.poller = p
	}
	return ps
}

// pipe returns a new pipe of the set's kind.
func (ps *pipes) pipe(tb testing.TB) (r, w pipeEnd) {
	tb.Helper()
	if ps.poller == nil {
		or, ow, err := os.Pipe()
		if err != nil {
			tb.Fatalf("os.Pipe: %v", err)
		}
		ps.ends = append(ps.ends, or, ow)
		return or, ow
	}
	gr, gw, err := gatenet.PipeOn(ps.poller)
	if err != nil {
		tb.Fatalf("gatenet.PipeOn: %v", err)
	}
	ps.ends = append(ps.ends, gr, gw)
	return gr, gw
}

// close closes every end not closed yet (an os.ErrClosed from an end the
// benchmark already closed is expected) and then the poller.
func (ps *pipes) close(tb testing.TB) {
	tb.Helper()
	for _, e := range ps.ends {
		if err := e.Close(); err != nil && !isClosedErr(err) {
			tb.Errorf("closing pipe end: %v", err)
		}
	}
	if ps.poller != nil {
		if err := ps.poller.Close(); err != nil {
			tb.Errorf("closing poller: %v", err)
		}
	}
}

func isClosedErr(err error) bool { return errors.Is(err, os.ErrClosed) }

// cpuNanos is this process's user plus system CPU time.
func cpuNanos(tb testing.TB) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchPerOp runs op b.N times between a timer reset and stop, and
// reports the rate (rateUnit, "rt/s" say) and this process's CPU time per
// op (cpuUnit, "cpu-ns/rt").
func benchPerOp(b *testing.B, rateUnit, cpuUnit string, op func()) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos(b)
	for range b.N {
		op()
	}
	cpu1 := cpuNanos(b)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), rateUnit)
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), cpuUnit)
}

// benchRoundTrips is benchPerOp over round trips: each writes a size-byte
// message to w and reads as many bytes back from r, where an echo
// (benchharness.Echo, its result on echoDone) sends them. Then it closes
// w, which ends the echo, and checks that the echo ended cleanly. A failed
// round trip is fatal; the caller's deferred close ends the echo.
func benchRoundTrips(b *testing.B, w io.WriteCloser, r io.Reader, size int, echoDone <-chan error) {
	msg := make([]byte, size)
	for i := range msg {
		msg[i] = byte(i)
	}
	reply := make([]byte, size)
	benchPerOp(b, "rt/s", "cpu-ns/rt", func() {
		if _, err := w.Write(msg); err != nil {
			b.Fatalf("write: %v", err)
		}
		if _, err := io.ReadFull(r, reply); err != nil {
			b.Fatalf("read: %v", err)
		}
	})
	if err := w.Close(); err != nil {
		b.Errorf("closing the writer: %v", err)
	}
	if err := <-echoDone; err != nil {
		b.Errorf("echo: %v", err)
	}
}

// writeChunks times b.N writes of a size-byte chunk to w, each counted as
// size bytes (b.SetBytes). The timer still runs when it returns: the
// caller stops it once the reader has the tail (closeAndCheckDrained).
func writeChunks(b *testing.B, w io.Writer, size int) {
	chunk := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := w.Write(chunk); err != nil {
			b.Fatalf("write: %v", err)
		}
	}
}

// BenchmarkPipePingPong: the loop writes size bytes on pipe A, an echo
// goroutine reads them and writes them back on pipe B, the loop reads them
// back. One iteration is one round trip.
func BenchmarkPipePingPong(b *testing.B) {
	for _, size := range []int{1, 4096} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			for _, k := range pipeKinds() {
				b.Run(k.name, func(b *testing.B) { benchPingPong(b, k, size) })
			}
		})
	}
}

func benchPingPong(b *testing.B, k pipeKind, size int) {
	testutil.CheckLeaks(b)
	ps := newPipes(b, k)
	defer ps.close(b)
	aR, aW := ps.pipe(b)
	bR, bW := ps.pipe(b)

	echoDone := benchharness.Echo(aR, bW, size) // ends when aW closes
	benchRoundTrips(b, aW, bR, size, echoDone)
}

// BenchmarkPipeBulk streams 64 KiB writes through one pipe to a reader
// goroutine that discards them.
func BenchmarkPipeBulk(b *testing.B) {
	for _, k := range pipeKinds() {
		b.Run(k.name, func(b *testing.B) { benchBulk(b, k) })
	}
}

const bulkChunk = 64 << 10

func benchBulk(b *testing.B, k pipeKind) {
	testutil.CheckLeaks(b)
	ps := newPipes(b, k)
	defer ps.close(b)
	r, w := ps.pipe(b)

	readDone := benchharness.Drain(r, bulkChunk)
	writeChunks(b, w, bulkChunk)
	closeAndCheckDrained(b, w, readDone, int64(b.N)*bulkChunk) // the tail still in the pipe counts
}

// BenchmarkPipeOpenClose makes a pipe and closes both ends, on a poller
// with nothing else registered: every iteration takes the poller from idle
// to busy and back, the drain loop's start and linger (pollfd/drain.go).
func BenchmarkPipeOpenClose(b *testing.B) {
	for _, k := range pipeKinds() {
		b.Run(k.name, func(b *testing.B) {
			testutil.CheckLeaks(b)
			ps := newPipes(b, k)
			defer ps.close(b)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r, w := ps.pipe(b)
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				ps.ends = ps.ends[:0]
			}
			b.StopTimer()
			if ps.poller != nil {
				st := ps.poller.Stats()
				b.ReportMetric(float64(st.DrainStarts)/float64(b.N), "loop-starts/op")
			}
		})
	}
}

// BenchmarkPipeReadWriteAllocs is a 1-byte write then a 1-byte read on a
// gatenet pipe (default poller): the data is there, nothing parks.
func BenchmarkPipeReadWriteAllocs(b *testing.B) {
	// The default poller opens its epoll descriptors on first use and keeps
	// them for the life of the process: start it before counting.
	if r, w, err := gatenet.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	testutil.CheckLeaks(b)
	r, w, err := gatenet.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	one := []byte{1}
	buf := make([]byte, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := w.Write(one); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPipeHotPathAllocs checks that Read and Write allocate nothing, under
// every strategy, both when the data is already there and when the Read
// must park and be woken by the poller.
func TestPipeHotPathAllocs(t *testing.T) {
	if testing.CoverMode() != "" {
		t.Skip("coverage instrumentation allocates")
	}
	for _, opts := range testutil.Strategies() {
		t.Run(opts.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 2*time.Minute)
			p := testutil.NewPoller(t, opts)
			r, w, err := gatenet.PipeOn(p)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			one := []byte{1}
			buf := make([]byte, 1)

			t.Run("ready", func(t *testing.T) {
				allocs := testing.AllocsPerRun(1000, func() {
					if _, err := w.Write(one); err != nil {
						panic(err)
					}
					if _, err := r.Read(buf); err != nil {
						panic(err)
					}
				})
				if allocs != 0 {
					t.Errorf("write+read with data ready: %v allocs per run, want 0", allocs)
				}
			})

			t.Run("parked", func(t *testing.T) {
				// The helper is told the poller's park count before each
				// Read, waits until the count moves (the reader is parked
				// on its gate), then writes the byte that wakes it. Sending
				// a uint64 on a channel, Stats and Gosched allocate nothing.
				start := make(chan uint64)
				helperDone := make(chan struct{})
				go func() {
					defer close(helperDone)
					for parks := range start {
						for p.Stats().Parks == parks {
							runtime.Gosched()
						}
						if _, err := w.Write(one); err != nil {
							panic(err)
						}
					}
				}()
				parks0 := p.Stats().Parks
				allocs := testing.AllocsPerRun(1000, func() {
					start <- p.Stats().Parks
					if _, err := r.Read(buf); err != nil {
						panic(err)
					}
				})
				close(start)
				<-helperDone
				if allocs != 0 {
					t.Errorf("read that parks and is woken: %v allocs per run, want 0", allocs)
				}
				// AllocsPerRun makes 1001 runs (one warm-up); every Read
				// must have parked, or this did not test the wake path.
				if got := p.Stats().Parks - parks0; got < 1001 {
					t.Errorf("only %d of 1001 reads parked", got)
				}
			})
		})
	}
}
