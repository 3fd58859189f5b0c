//go:build linux

package gatenet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// takeFromPeer makes s, watched by q, readable from its peer c and takes
// its report, as a worker's Next does: the caller then holds s.
func takeFromPeer(t *testing.T, q *gatenet.ReadyQueue, c, s net.Conn) {
	t.Helper()
	_, err := c.Write([]byte("a"))
	require.NoError(t, err)
	p, err := nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, p)
}

// TestReadyQueueWriteKeepsOrder: bytes written with q.Write while earlier
// ones wait arrive after them, all of them, in order, while the reader
// reads slowly.
func TestReadyQueueWriteKeepsOrder(t *testing.T) {
	q, c, s := watchedPair(t)
	workers := startEchoWorkers(q, 1, 4096) // its Nexts send what waits
	defer workers.Stop()

	const chunks, size = 512, 16 << 10
	want := make([]byte, 0, chunks*size)
	for i := range chunks {
		b := bytes.Repeat([]byte(fmt.Sprintf("%07d|", i)), size/8)
		want = append(want, b...)
		n, err := q.Write(s, b)
		require.NoError(t, err)
		require.Equal(t, len(b), n)
	}
	require.Positive(t, q.Buffered(s), "8 MiB into a loopback socket nobody reads: some must wait")
	got := make([]byte, 0, len(want))
	buf := make([]byte, 64<<10)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	for len(got) < len(want) {
		n, err := c.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	require.True(t, bytes.Equal(want, got), "bytes reordered or lost")
	for q.Buffered(s) != 0 {
		time.Sleep(time.Millisecond)
	}
}

// TestReadyQueueCloseWhenFlushed: a conn closed with output waiting sends
// all of it first, then the peer reads end of stream.
func TestReadyQueueCloseWhenFlushed(t *testing.T) {
	q, c, s := watchedPair(t)
	workers := startEchoWorkers(q, 1, 4096)
	defer workers.Stop()
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
	_, err := q.Write(s, want)
	require.NoError(t, err)
	require.Positive(t, q.Buffered(s))
	require.NoError(t, q.CloseWhenFlushed(s))
	_, err = q.Write(s, []byte("x"))
	require.ErrorIs(t, err, net.ErrClosed, "a conn closing when flushed takes no more")
	c.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "got %d of %d bytes", len(got), len(want))
	_, err = s.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
}

// TestReadyQueueHoldEndsMidTurn: output past the limit that is all sent
// while a worker still holds the conn does not hand the conn to another
// worker: reads stay the holder's until its Add.
func TestReadyQueueHoldEndsMidTurn(t *testing.T) {
	q, c, s := watchedPair(t)
	require.NoError(t, q.SetOutputLimit(0))
	takeFromPeer(t, q, c, s) // this test is the worker holding s now

	_, err := q.Write(s, make([]byte, 8<<20))
	require.NoError(t, err)
	require.Positive(t, q.Buffered(s))
	got := make(chan gatenet.Pollable, 1)
	go func() { // another worker: its Next sends the output
		if p, err := nextWithin(q, time.Minute); err == nil {
			got <- p
		}
	}()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = io.CopyN(io.Discard, c, 8<<20)
	require.NoError(t, err)
	for q.Buffered(s) != 0 {
		time.Sleep(time.Millisecond)
	}
	_, err = c.Write([]byte("b")) // a read edge while s is held
	require.NoError(t, err)
	select {
	case p := <-got:
		t.Fatalf("%v reported to a second worker while the first held it", p)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, q.Add(s)) // handed back: reported, "ab" is unread
	select {
	case p := <-got:
		require.Same(t, s, p)
	case <-time.After(time.Minute):
		t.Fatal("not reported after Add")
	}
}

// TestReadyQueueRaisedLimitReleases: a member held past the output limit,
// whose peer reads nothing, is reported readable as soon as a raised
// limit covers its output, not only once that output is sent.
func TestReadyQueueRaisedLimitReleases(t *testing.T) {
	q, c, s := watchedPair(t)
	require.NoError(t, q.SetOutputLimit(0))
	takeFromPeer(t, q, c, s)

	const size = 8 << 20 // past what the sockets' buffers take: output waits
	_, err := q.Write(s, make([]byte, size))
	require.NoError(t, err)
	require.Positive(t, q.Buffered(s))
	require.NoError(t, q.Add(s)) // handed back while held
	_, err = c.Write([]byte("b"))
	require.NoError(t, err)
	got := make(chan gatenet.Pollable, 1)
	go func() {
		if p, err := nextWithin(q, time.Minute); err == nil {
			got <- p
		}
	}()
	select {
	case p := <-got:
		t.Fatalf("%v reported while held", p)
	case <-time.After(100 * time.Millisecond):
	}

	require.NoError(t, q.SetOutputLimit(size/2)) // raised, but not past what waits
	select {
	case p := <-got:
		t.Fatalf("%v reported with more output waiting than the limit", p)
	case <-time.After(100 * time.Millisecond):
	}
	require.NoError(t, q.SetOutputLimit(2*size))
	select {
	case p := <-got:
		require.Same(t, s, p)
	case <-time.After(time.Minute):
		t.Fatal("still held after the limit was raised past its output")
	}
	require.Positive(t, q.Buffered(s)) // released unsent

	// Its next Write past the limit holds it again.
	require.NoError(t, q.SetOutputLimit(0))
	_, err = q.Write(s, []byte("c"))
	require.NoError(t, err)
	require.NoError(t, q.Add(s))
	_, err = c.Write([]byte("d"))
	require.NoError(t, err)
	_, err = nextWithin(q, 100*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestReadyQueueWriteDeadlineBoundsOutput: output waiting for a peer that
// reads nothing is dropped when the member's write deadline passes, and
// the worker hears of it from Write and Add; a member given to
// CloseWhenFlushed is closed then. Deadlines set in the future and in the
// past both count.
func TestReadyQueueWriteDeadlineBoundsOutput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close bool          // CloseWhenFlushed instead of Add
		in    time.Duration // the deadline, from now
	}{
		{"future", false, 50 * time.Millisecond},
		{"past", false, -time.Second},
		{"closing/future", true, 50 * time.Millisecond},
		{"closing/past", true, -time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, c, s := watchedPair(t)
			takeFromPeer(t, q, c, s)

			_, err := q.Write(s, make([]byte, 8<<20)) // past what the buffers take
			require.NoError(t, err)
			require.Positive(t, q.Buffered(s))
			if tc.close {
				require.NoError(t, q.CloseWhenFlushed(s))
			} else {
				require.NoError(t, q.Add(s))
			}
			nexts := make(chan error, 1)
			go func() { // the worker: its Next sends, or drops, the output
				_, err := nextWithin(q, time.Minute)
				nexts <- err
			}()
			require.NoError(t, s.SetWriteDeadline(time.Now().Add(tc.in)))

			if tc.close {
				// s is closed, with c still reading nothing; then c reads
				// what was sent, and the end.
				for limit := time.Now().Add(time.Minute); s.SetReadDeadline(time.Time{}) == nil; time.Sleep(time.Millisecond) {
					if time.Now().After(limit) {
						t.Fatal("not closed a minute after its write deadline")
					}
				}
				require.ErrorIs(t, s.SetReadDeadline(time.Time{}), net.ErrClosed)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
				_, err := io.Copy(io.Discard, c)
				if err != nil {
					require.ErrorIs(t, err, syscall.ECONNRESET)
				}
				return
			}
			require.NoError(t, <-nexts) // s, reported so that its worker hears
			require.Zero(t, q.Buffered(s))
			_, err = q.Write(s, []byte("b"))
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			require.ErrorIs(t, q.Add(s), os.ErrDeadlineExceeded)
		})
	}
}

// TestReadyQueueMixedWritesNotStranded: a write through the member's own
// writers (Write, writev, sendfile, splice, WaitWrite, its RawConn), parked for room
// while q's output waits, does not take the room q waits for: when the
// peer reads, both are sent, and nothing waits for good. (Their bytes may
// interleave: Write's doc says to write through q only.)
func TestReadyQueueMixedWritesNotStranded(t *testing.T) {
	writers := map[string]func(t *testing.T, s *gatenet.TCPConn, n int) error{
		"Write": func(_ *testing.T, s *gatenet.TCPConn, n int) error {
			_, err := s.Write(make([]byte, n))
			return err
		},
		"writev": func(_ *testing.T, s *gatenet.TCPConn, n int) error {
			bufs := net.Buffers{make([]byte, n/2), make([]byte, n-n/2)}
			_, err := bufs.WriteTo(s)
			return err
		},
		"sendfile": func(t *testing.T, s *gatenet.TCPConn, n int) error {
			name := filepath.Join(t.TempDir(), "src")
			if err := os.WriteFile(name, make([]byte, n), 0o600); err != nil {
				return err
			}
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = s.ReadFrom(f)
			return err
		},
		"splice": func(_ *testing.T, s *gatenet.TCPConn, n int) error {
			r, w, err := gatenet.Pipe()
			if err != nil {
				return err
			}
			defer r.Close()
			go func() {
				w.Write(make([]byte, n))
				w.Close()
			}()
			_, err = s.ReadFrom(r)
			return err
		},
		"WaitWrite": func(_ *testing.T, s *gatenet.TCPConn, n int) error {
			if err := s.WaitWrite(context.Background()); err != nil { // parks for room
				return err
			}
			_, err := s.Write(make([]byte, n))
			return err
		},
		"RawConn": func(_ *testing.T, s *gatenet.TCPConn, n int) error {
			rc, err := s.SyscallConn()
			if err != nil {
				return err
			}
			b := make([]byte, n)
			var werr error
			err = rc.Write(func(fd uintptr) bool {
				for len(b) > 0 {
					m, err := syscall.Write(int(fd), b)
					if err == syscall.EAGAIN {
						return false // parks for room
					}
					if err != nil {
						werr = err
						return true
					}
					b = b[m:]
				}
				return true
			})
			return errors.Join(err, werr)
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			for round := range 3 {
				q, c, s := watchedPair(t)
				const size = 4 << 20 // past what the buffers take
				_, err := q.Write(s, make([]byte, size))
				require.NoError(t, err)
				require.Positive(t, q.Buffered(s))
				nexts := make(chan struct{})
				go func() { // the worker: its Next sends q's output
					defer close(nexts)
					nextWithin(q, time.Minute)
				}()
				own := size + round*1000
				wrote := make(chan error, 1)
				go func() { wrote <- write(t, s, own) }()
				require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
				n, err := io.CopyN(io.Discard, c, int64(size+own))
				require.NoError(t, err, "round %d: read %d of %d bytes, %d still in the queue", round, n, size+own, q.Buffered(s))
				require.NoError(t, <-wrote)
				require.Zero(t, q.Buffered(s))
				q.Close()
				<-nexts
			}
		})
	}
}

// TestReadyQueueWriteFailureReachesWorker: a peer that resets while output
// waits: the failed send is reported, and the worker closes the conn.
func TestReadyQueueWriteFailureReachesWorker(t *testing.T) {
	q, c, s := watchedPair(t)
	workers := startEchoWorkers(q, 1, 4096)
	defer workers.Stop()
	big := make([]byte, 8<<20)
	_, err := q.Write(s, big)
	require.NoError(t, err)
	require.Positive(t, q.Buffered(s))
	require.NoError(t, c.SetLinger(0))
	require.NoError(t, c.Close()) // RST
	for workers.closed.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	_, err = q.Write(s, []byte("x"))
	require.Error(t, err)
}

// TestReadyQueueWriteInBubble: a reader that sleeps a fake second between
// reads, and output queued for it, finish in fake time: the reader's read
// reports the room it made.
func TestReadyQueueWriteInBubble(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	wall := time.Now()
	var fake time.Duration
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		q := gatenet.NewReadyQueue()
		c, s := testutil.TCPPair(t)
		require.NoError(t, q.Add(s))
		workers := startEchoWorkers(q, 1, 4096)
		defer workers.Stop()
		want := make([]byte, 4<<20)
		for i := range want {
			want[i] = byte(i / 7)
		}
		_, err := q.Write(s, want)
		require.NoError(t, err)
		got := make([]byte, 0, len(want))
		buf := make([]byte, 256<<10)
		for len(got) < len(want) {
			n, err := c.Read(buf)
			require.NoError(t, err)
			got = append(got, buf[:n]...)
			time.Sleep(time.Second)
		}
		require.True(t, bytes.Equal(want, got))
		fake = time.Since(start)
	})
	t.Logf("4 MiB read 256 KiB at a time, a second apart: fake time %v, wall time %v", fake, time.Since(wall))
}

// TestReadyQueueWriteDeadlineInBubble: in a synctest bubble, a write
// deadline on a member whose peer reads nothing ends its output on the
// fake clock, and Next, asleep meanwhile, wakes for it.
func TestReadyQueueWriteDeadlineInBubble(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	synctest.Test(t, func(t *testing.T) {
		q := gatenet.NewReadyQueue()
		defer q.Close()
		_, s := testutil.TCPPair(t)
		require.NoError(t, q.Add(s))
		_, err := q.Write(s, make([]byte, 8<<20))
		require.NoError(t, err)
		require.Positive(t, q.Buffered(s))
		start := time.Now()
		require.NoError(t, s.SetWriteDeadline(start.Add(time.Hour)))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
		defer cancel()
		p, err := q.Next(ctx) // the flush fails at the deadline: s is reported
		require.NoError(t, err)
		require.Same(t, s, p)
		require.Equal(t, time.Hour, time.Since(start))
		require.ErrorIs(t, q.Add(s), os.ErrDeadlineExceeded)
		require.Zero(t, q.Buffered(s))
	})
}
