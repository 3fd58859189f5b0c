//go:build linux

package gatenet_test

// Stress tests for Files: (a) many messages through one pipe with random
// message and buffer sizes under deadline churn, checked end to end by
// SHA-256. It exercises edge-triggered readiness: each side runs without a
// deadline about two thirds of the time, so a lost edge hangs the test and
// the watchdog reports it, and deadlines that expire mid-stream (the
// stalls force some) check that a timed-out Write's partial count and a
// timed-out Read's n=0 keep the stream intact; (b) 64 goroutines mixing Read, Write,
// SetDeadline and Close on 8 shared pipes.
//
// The writer's stalls are a handshake, so that each makes a partial Write
// for certain, however the two goroutines are scheduled: the writer asks
// the reader to hold (a past read deadline kicks it out of a Read that
// waits for data), the reader drains exactly what has been written and
// holds, the writer writes more than the pipe holds under a deadline (it
// must time out with part of it written), then lets the reader go.

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

const (
	stressMaxBuf  = 4096 // reader buffer sizes are 1..stressMaxBuf bytes
	stressStalls  = 4    // pauses of each side, during which the other times out
	stressStallOf = 100 * time.Millisecond
	stressBigMsg  = 3 * pipeCapacity // written while the reader holds: a partial Write
)

// stressMaxMsg bounds TestFileStressMessages' message sizes
// (1..stressMaxMsg() bytes). Under the race detector the 10^6 messages are
// kept short: with sizes up to 2 KiB (1 GB in all) the run takes over 20 s
// on two cores; the count of messages, which is what exercises the edges,
// is the same.
func stressMaxMsg() int {
	if testutil.Race {
		return 512
	}
	return 2048
}

func TestFileStressMessages(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for _, o := range testutil.Strategies() {
		msgs := 100_000
		if o == pollfd.Default().Options() && !testing.Short() {
			msgs = 1_000_000
		}
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			p := testutil.NewPoller(t, o)
			r, w := newPipeOn(t, p)
			stressMessages(t, r, w, msgs)
		})
	}
}

// stressSide is what one end of the stress pipe reports.
type stressSide struct {
	sum      [sha256.Size]byte
	bytes    int64
	ops      int64 // Read or Write calls
	timeouts int64
	partial  int64 // timed-out Writes that had written part of their buffer
	err      error // an unexpected error, ending that side
}

func stressMessages(t *testing.T, r, w *gatenet.File, msgs int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d messages, seed %d", msgs, seed)
	pool := make([]byte, 1<<20)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)}).Read(pool)

	hold := &stressHold{
		t:          t,
		held:       make(chan struct{}),
		resume:     make(chan struct{}),
		readerDone: make(chan struct{}),
		kick:       func() { r.SetReadDeadline(time.Now().Add(-time.Second)) },
	}
	wres := make(chan stressSide, 1)
	go func() {
		ws := stressWriter(w, msgs, pool, rand.New(rand.NewPCG(seed, 1)), hold)
		if err := w.Close(); err != nil && ws.err == nil {
			ws.err = err
		}
		wres <- ws
	}()
	rs := stressReader(r, rand.New(rand.NewPCG(seed, 2)), hold)
	close(hold.readerDone)
	if rs.err != nil {
		r.Close() // unblocks the writer with EPIPE
	}
	ws := <-wres
	t.Logf("writer: %d bytes, %d writes, %d timeouts (%d partial)", ws.bytes, ws.ops, ws.timeouts, ws.partial)
	t.Logf("reader: %d bytes, %d reads, %d timeouts", rs.bytes, rs.ops, rs.timeouts)
	require.NoError(t, rs.err, "reader") // first: a failing reader makes the writer fail too
	require.NoError(t, ws.err, "writer")
	require.Equal(t, ws.bytes, rs.bytes, "bytes written and read")
	require.Equal(t, ws.sum, rs.sum, "SHA-256 of the stream")
	require.Positive(t, ws.timeouts+rs.timeouts, "the stalls never made a deadline expire")
	require.Positive(t, ws.partial, "no timed-out Write was partial")
}

// stressHold is the writer's handshake with the reader (see the top of
// this file).
type stressHold struct {
	t          testing.TB   // for the writer's log of a retried held Write
	request    atomic.Bool  // writer: drain up to written, then hold
	written    atomic.Int64 // the writer's byte count when it asked
	held       chan struct{}
	resume     chan struct{}
	readerDone chan struct{} // closed when the reader has returned
	kick       func()        // ends a Read the reader is blocked in
}

// stressDeadline picks a deadline 1-50 ms away.
func stressDeadline(rng *rand.Rand) time.Time {
	return time.Now().Add(time.Millisecond + time.Duration(rng.Int64N(int64(49*time.Millisecond))))
}

// stressChurnOther sets the deadline of the direction a pipe end does not
// use (past, future or none): it must not disturb the other direction.
func stressChurnOther(rng *rand.Rand, set func(time.Time) error) {
	switch rng.IntN(3) {
	case 0:
		set(time.Now().Add(-time.Second))
	case 1:
		set(stressDeadline(rng))
	default:
		set(time.Time{})
	}
}

func stressIsTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }

func stressWriter(w *gatenet.File, msgs int, pool []byte, rng *rand.Rand, hold *stressHold) (s stressSide) {
	h := sha256.New()
	defer func() { h.Sum(s.sum[:0]) }()
	w.SetWriteDeadline(stressDeadline(rng))
	stallEvery := msgs / (2*stressStalls + 1)
	for i := 1; i <= msgs; i++ {
		size := 1 + rng.IntN(stressMaxMsg())
		off := rng.IntN(len(pool) - size)
		msg := pool[off : off+size]
		switch c := rng.IntN(64); {
		case c < 4:
			w.SetWriteDeadline(stressDeadline(rng))
		case c < 12:
			w.SetWriteDeadline(time.Time{})
		case c < 13:
			stressChurnOther(rng, w.SetReadDeadline)
		}
		h.Write(msg)
		if s.writeAll(w, msg, rng); s.err != nil {
			return s
		}
		if stallEvery > 0 && i%stallEvery == 0 {
			if (i/stallEvery)%2 == 1 {
				// The reader holds while this side writes more than the
				// pipe holds: the Write times out part-way.
				if s.writeHeld(w, pool[:stressBigMsg], h, rng, hold); s.err != nil {
					return s
				}
			} else {
				time.Sleep(stressStallOf) // the reader times out
			}
		}
	}
	return s
}

// writeHeld writes big, which the pipe cannot hold, while the reader
// holds: the first Write must time out having written part of it.
func (s *stressSide) writeHeld(w *gatenet.File, big []byte, h hash.Hash, rng *rand.Rand, hold *stressHold) {
	hold.written.Store(s.bytes)
	hold.request.Store(true)
	for held := false; !held; {
		hold.kick()
		select {
		case <-hold.held:
			held = true
		case <-hold.readerDone: // it failed; its error is the one to report
			s.err = errors.New("the reader ended before it held")
			return
		case <-time.After(time.Millisecond):
		}
	}
	h.Write(big)
	// The pipe is empty, so a Write that begins before its deadline
	// writes a pipeful: n == 0 means the deadline passed before it began
	// (a loaded machine), and the held Write is tried again, longer.
	var n int
	var err error
	d0 := 10*time.Millisecond + time.Duration(rng.Int64N(int64(40*time.Millisecond)))
	testutil.RetrySlow(hold.t, d0, "the held Write began", func(d time.Duration) bool {
		w.SetWriteDeadline(time.Now().Add(d))
		n, err = w.Write(big)
		s.ops++
		s.bytes += int64(n)
		if n == 0 && stressIsTimeout(err) {
			s.timeouts++
			return true
		}
		return false
	})
	hold.resume <- struct{}{}
	if !stressIsTimeout(err) || n == 0 || n == len(big) {
		s.err = fmt.Errorf("a Write of %d bytes to a held reader: n = %d, err = %v; want a timeout part-way", len(big), n, err)
		return
	}
	s.timeouts++
	s.partial++
	w.SetWriteDeadline(time.Time{})
	s.writeAll(w, big[n:], rng)
}

// writeAll writes msg, resuming after each timeout from where the Write
// stopped (its n counts), with the deadline renewed or cleared.
func (s *stressSide) writeAll(w *gatenet.File, msg []byte, rng *rand.Rand) {
	for len(msg) > 0 {
		n, err := w.Write(msg)
		s.ops++
		s.bytes += int64(n)
		msg = msg[n:]
		if err == nil {
			continue
		}
		if !stressIsTimeout(err) {
			s.err = err
			return
		}
		s.timeouts++
		if n > 0 && len(msg) > 0 {
			s.partial++
		}
		if rng.IntN(2) == 0 {
			w.SetWriteDeadline(stressDeadline(rng))
		} else {
			w.SetWriteDeadline(time.Time{})
		}
	}
}

func stressReader(r *gatenet.File, rng *rand.Rand, hold *stressHold) (s stressSide) {
	h := sha256.New()
	defer func() { h.Sum(s.sum[:0]) }()
	buf := make([]byte, stressMaxBuf)
	r.SetReadDeadline(stressDeadline(rng))
	for {
		if hold.request.Swap(false) {
			if s.drain(r, buf, h, hold.written.Load()); s.err != nil {
				return s
			}
			hold.held <- struct{}{}
			<-hold.resume
			r.SetReadDeadline(stressDeadline(rng))
		}
		switch c := rng.IntN(64); {
		case c < 4:
			r.SetReadDeadline(stressDeadline(rng))
		case c < 12:
			r.SetReadDeadline(time.Time{})
		case c < 13:
			stressChurnOther(rng, r.SetWriteDeadline)
		}
		n, err := r.Read(buf[:1+rng.IntN(len(buf))])
		s.ops++
		s.bytes += int64(n)
		h.Write(buf[:n])
		switch {
		case err == nil:
		case err == io.EOF:
			return s
		case stressIsTimeout(err):
			s.timeouts++
			if n != 0 {
				s.err = errors.New("a timed-out Read returned data")
				return s
			}
			if rng.IntN(2) == 0 {
				r.SetReadDeadline(stressDeadline(rng))
			} else {
				r.SetReadDeadline(time.Time{})
			}
		default:
			s.err = err
			return s
		}
	}
}

// drain reads until the reader has all the writer had written when it
// asked to hold, so the pipe is empty. The writer's kicks (past deadlines)
// may still end some of these Reads: those are cleared and retried.
func (s *stressSide) drain(r *gatenet.File, buf []byte, h hash.Hash, written int64) {
	for s.bytes < written {
		r.SetReadDeadline(time.Time{})
		n, err := r.Read(buf)
		s.ops++
		s.bytes += int64(n)
		h.Write(buf[:n])
		if err != nil && !stressIsTimeout(err) {
			s.err = fmt.Errorf("draining before a hold: %w", err)
			return
		}
	}
}

// 64 goroutines mix Read, Write, SetDeadline and Close on 8 shared pipes;
// a closed pipe is replaced by a fresh one. Nothing may panic or hang, no
// descriptor may leak, and every error must be one a File documents.
func TestFileRaceMixedOps(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	for _, o := range testutil.Strategies() {
		d := 400 * time.Millisecond
		if o == pollfd.Default().Options() {
			d = 2 * time.Second
		}
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			p := testutil.NewPoller(t, o)
			raceMixedOps(t, p, d)
		})
	}
}

type racePair struct{ r, w *gatenet.File }

// raceErr classifies an error seen by the race test, or returns nil if it
// is not an allowed one.
func raceAllowed(op string, err error) bool {
	switch op {
	case "Read", "Write":
		if err == io.EOF {
			return op == "Read"
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != map[string]string{"Read": "read", "Write": "write"}[op] {
			return false
		}
		return errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) ||
			(op == "Write" && errors.Is(err, syscall.EPIPE))
	case "SetDeadline":
		return err.Error() == "use of closed file"
	case "Close":
		return errors.Is(err, os.ErrClosed)
	}
	return false
}

func raceMixedOps(t *testing.T, p *pollfd.Poller, d time.Duration) {
	const goroutines, npipes = 64, 8
	var (
		mu      sync.Mutex
		stopped bool
		all     []racePair
	)
	newPair := func() *racePair {
		r, w, err := gatenet.PipeOn(p)
		if err != nil {
			panic(err)
		}
		pp := &racePair{r, w}
		all = append(all, *pp)
		return pp
	}
	var slots [npipes]atomic.Pointer[racePair]
	mu.Lock()
	for i := range slots {
		slots[i].Store(newPair())
	}
	mu.Unlock()

	var (
		bad    []string
		counts sync.Map // error text → *atomic.Int64
	)
	record := func(op string, err error) {
		if err == nil {
			return
		}
		if !raceAllowed(op, err) {
			mu.Lock()
			bad = append(bad, op+": "+err.Error())
			mu.Unlock()
		}
		c, _ := counts.LoadOrStore(op+": "+err.Error(), new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			buf := make([]byte, 4096)
			for !stop.Load() {
				i := rng.IntN(npipes)
				pp := slots[i].Load()
				f := pp.r
				if rng.IntN(2) == 0 {
					f = pp.w
				}
				switch c := rng.IntN(100); {
				case c < 35:
					_, err := pp.r.Read(buf[:1+rng.IntN(512)])
					record("Read", err)
				case c < 70:
					_, err := pp.w.Write(buf[:1+rng.IntN(len(buf))])
					record("Write", err)
				case c < 90:
					var dl time.Time
					switch rng.IntN(3) {
					case 0:
						dl = time.Now().Add(-time.Millisecond)
					case 1:
						dl = time.Now().Add(time.Duration(rng.Int64N(int64(20 * time.Millisecond))))
					}
					switch rng.IntN(3) {
					case 0:
						record("SetDeadline", f.SetDeadline(dl))
					case 1:
						record("SetDeadline", f.SetReadDeadline(dl))
					default:
						record("SetDeadline", f.SetWriteDeadline(dl))
					}
				case c < 92:
					record("Close", f.Close())
					mu.Lock()
					if !stopped && slots[i].Load() == pp {
						slots[i].Store(newPair())
						mu.Unlock()
						record("Close", pp.r.Close())
						record("Close", pp.w.Close())
					} else {
						mu.Unlock()
					}
				default:
					time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
				}
			}
		})
	}
	time.Sleep(d)
	stop.Store(true)
	mu.Lock()
	stopped = true
	mu.Unlock()
	// Closing every pipe releases the goroutines blocked in Read or Write.
	for _, pp := range all {
		pp.r.Close()
		pp.w.Close()
	}
	wg.Wait()
	var summary bytes.Buffer
	counts.Range(func(k, v any) bool {
		summary.WriteString("\n  " + k.(string) + " ×" + strconv.FormatInt(v.(*atomic.Int64).Load(), 10))
		return true
	})
	t.Logf("%d pipes used; errors seen:%s", len(all), summary.String())
	require.Empty(t, bad, "unexpected errors")
	require.Zero(t, p.Stats().Registered, "descriptors still registered")
}
