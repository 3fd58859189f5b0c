//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Contexts in fake time (pollfd/bubble_ctx.go): a durable park with a
// context whose Done channel was made outside the bubble lets the bubble
// idle only once the context is done, as a goroutine of the bubble
// receiving from that channel would; one made in the bubble ends at its
// deadline on the bubble's clock.

// ctxWaits are the waits a context can end, each made in a bubble on
// descriptors paired there (so that it parks durably) and given ctx.
var ctxWaits = []struct {
	name string
	wait func(t *testing.T, ctx context.Context) error
}{
	{"ReadContext", func(t *testing.T, ctx context.Context) error {
		r, w := bubblePipe(t)
		defer w.Close()
		_, err := r.ReadContext(ctx, make([]byte, 1))
		return err
	}},
	{"WriteContext", func(t *testing.T, ctx context.Context) error {
		r, w := bubblePipe(t)
		defer r.Close()
		_, err := w.WriteContext(ctx, make([]byte, 4<<20)) // more than the pipe holds
		return err
	}},
	{"WaitRead", func(t *testing.T, ctx context.Context) error {
		r, w := bubblePipe(t)
		defer w.Close()
		return r.WaitRead(ctx)
	}},
	{"TCP ReadContext", func(t *testing.T, ctx context.Context) error {
		c, s := testutil.Pair(t, "tcp", "127.0.0.1:0")
		defer s.Close()
		defer c.Close()
		_, err := c.(gatenet.ContextIO).ReadContext(ctx, make([]byte, 1))
		return err
	}},
	{"AcceptContext", func(t *testing.T, ctx context.Context) error {
		ln, err := gatenet.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer ln.Close()
		c, err := gatenet.Dial("tcp", ln.Addr().String()) // a dial of the bubble: accepts park durably
		require.NoError(t, err)
		defer c.Close()
		s, err := ln.Accept()
		require.NoError(t, err)
		defer s.Close()
		_, err = ln.AcceptContext(ctx)
		return err
	}},
	{"ReadyQueue.Next", func(t *testing.T, ctx context.Context) error {
		q := gatenet.NewReadyQueue()
		defer q.Close()
		_, err := q.Next(ctx)
		return err
	}},
	{"queued behind a Read", func(t *testing.T, ctx context.Context) error {
		r, w := bubblePipe(t)
		defer w.Close()
		first := make(chan error, 1)
		go func() { _, err := r.Read(make([]byte, 1)); first <- err }()
		synctest.Wait() // the Read holds the lock, parked durably
		// This one parks on the lock.
		_, err := r.ReadContext(ctx, make([]byte, 1))
		_, werr := w.Write([]byte{1})
		require.NoError(t, werr)
		require.NoError(t, <-first)
		return err
	}},
}

// bubblePipe is a pipe of the bubble; r closes with the test.
func bubblePipe(t *testing.T) (r, w *gatenet.File) {
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r, w
}

// TestSynctestChildContextFromOutside: a context cancelled only by a
// goroutine outside the bubble ends each wait with context.Canceled.
// Before the watcher, the bubble took the durable park for idle and
// synctest reported a deadlock, which crashed the process.
func TestSynctestChildContextFromOutside(t *testing.T) {
	childOnly(t)
	for _, w := range ctxWaits {
		t.Run(w.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx.Done() // the Done channel is made here, outside the bubble
			go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			inBubble(t, func(t *testing.T) {
				start := time.Now()
				require.ErrorIs(t, w.wait(t, ctx), context.Canceled)
				require.Zero(t, time.Since(start), "the bubble's clock moved")
			})
		})
	}
}

// TestSynctestChildDialCancelOutside: a dial in a bubble whose connect is
// pending (the listener's accept queue is full, so the SYN is dropped)
// ends with the context's error when the context ends outside the bubble,
// cancelled or timed out there, as net's. gatenet's connect closed a
// channel made in the bubble from the context's callback, which ran
// outside it: "close of synctest channel from outside bubble", a fatal
// error.
func TestSynctestChildDialCancelOutside(t *testing.T) {
	childOnly(t)
	lc := gatenet.ListenConfig{Backlog: 1}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	for range 2 { // backlog 1 queues two; a third connect stays pending
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
	}
	for name, ctxFor := range map[string]func() (context.Context, context.CancelFunc){
		"canceled": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { time.Sleep(50 * time.Millisecond); cancel() }()
			return ctx, cancel
		},
		"timed out": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 50*time.Millisecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			for _, dial := range []func(ctx context.Context) (net.Conn, error){
				func(ctx context.Context) (net.Conn, error) {
					return new(net.Dialer).DialContext(ctx, "tcp", ln.Addr().String())
				},
				func(ctx context.Context) (net.Conn, error) {
					return new(gatenet.Dialer).DialContext(ctx, "tcp", ln.Addr().String())
				},
			} {
				ctx, cancel := ctxFor()
				defer cancel()
				ctx.Done() // made outside the bubble, as synctest wants
				var err error
				inBubble(t, func(t *testing.T) {
					var c net.Conn
					c, err = dial(ctx)
					if c != nil {
						c.Close()
					}
				})
				require.Error(t, err)
				require.True(t, errors.Is(err, context.Canceled) || errors.Is(err, os.ErrDeadlineExceeded) ||
					errors.Is(err, context.DeadlineExceeded), "%v", err)
			}
		})
	}
}

// plainContext is a context that is none of the standard library's, nor
// built on one: context.AfterFunc watches it with a goroutine.
type plainContext struct{ done chan struct{} }

func (plainContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c plainContext) Done() <-chan struct{}     { return c.done }
func (plainContext) Err() error                  { return nil }
func (plainContext) Value(any) any               { return nil }

// TestSynctestChildPlainContext: reads in a bubble with a context that is
// none of the standard library's, on a conn made outside the bubble or in
// it and left open, let the bubble end. The context's registration, kept
// for the next wait, kept AfterFunc's watcher goroutine in the bubble,
// blocked on a channel the bubble could not close: synctest.Test hung (conn
// made outside) or reported a deadlock (conn made inside).
func TestSynctestChildPlainContext(t *testing.T) {
	childOnly(t)
	ctx := plainContext{done: make(chan struct{})}
	readTwice := func(t *testing.T, c, s net.Conn) {
		for range 2 { // the same context twice: the second wait registers it
			_, err := c.Write([]byte("x"))
			require.NoError(t, err)
			_, err = s.(gatenet.ContextIO).ReadContext(ctx, make([]byte, 1))
			require.NoError(t, err)
			go func() { // no time.Sleep: a read of a conn made outside never lets fake time move
				for range 2000 {
					runtime.Gosched()
				}
				c.Write([]byte("y"))
			}()
			_, err = s.(gatenet.ContextIO).ReadContext(ctx, make([]byte, 1)) // parks, most runs
			require.NoError(t, err)
		}
	}
	t.Run("conn made outside", func(t *testing.T) {
		c, s := testutil.Pair(t, "tcp", "127.0.0.1:0")
		inBubble(t, func(t *testing.T) { readTwice(t, c, s) })
	})
	t.Run("conn made inside, left open", func(t *testing.T) {
		outer := t // closes the pair once the bubble ended
		inBubble(t, func(t *testing.T) {
			c, s := testutil.Pair(outer, "tcp", "127.0.0.1:0")
			readTwice(t, c, s)
		})
	})
}

// TestSynctestContextInBubble: a context made in the bubble still lets it
// idle: each wait ends at the context's deadline on the bubble's clock.
func TestSynctestContextInBubble(t *testing.T) {
	for _, w := range ctxWaits {
		t.Run(w.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
				defer cancel()
				start := time.Now()
				require.ErrorIs(t, w.wait(t, ctx), context.DeadlineExceeded)
				require.Equal(t, time.Hour, time.Since(start))
			})
		})
	}
}

// TestSynctestChildFaultDelays: faults whose delays the fault layer times
// (latency, a slicer's delay, a bandwidth's pacing, a stall), attached in
// a bubble to one end of a TCP pair or a pipe, end on the real clock and
// the data arrives whole. A faulted wait is never durable, so the
// bubble's clock never moved while it lasted, and the delay, timed on that
// clock (time.AfterFunc, time.Now in the bubble), never ended: the test
// hung. So did it with the TCP pair made, and the faults attached, outside
// the bubble ("tcp outside"): the delay was timed by a timer the caller
// in the bubble made.
func TestSynctestChildFaultDelays(t *testing.T) {
	childOnly(t)
	for name, f := range map[string]*faults.Faults{
		"latency":      faults.New(1, faults.Latency{Delay: 20 * time.Millisecond}),
		"read latency": faults.New(1, faults.Latency{Delay: 20 * time.Millisecond, Dir: faults.Read}),
		"slicer":       faults.New(1, faults.Slicer{Min: 100, Max: 500, Delay: 2 * time.Millisecond}),
		"bandwidth":    faults.New(1, faults.Bandwidth{BytesPerSecond: 100_000}),
		"stall":        faults.New(1, faults.Stall{After: 1000, For: 20 * time.Millisecond}),
	} {
		onReader := strings.Contains(name, "read") || name == "bandwidth" || name == "stall"
		for _, kind := range []string{"tcp", "pipe", "tcp outside"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				var w io.WriteCloser
				var r io.ReadCloser
				if kind == "tcp outside" {
					c, s := testutil.Pair(t, "tcp", "127.0.0.1:0")
					w, r = c, s
					target := c.(gatenet.Pollable)
					if onReader {
						target = s.(gatenet.Pollable)
					}
					require.NoError(t, gatenet.InjectFaults(target, f))
				}
				inBubble(t, func(t *testing.T) {
					var target gatenet.Pollable
					switch kind {
					case "tcp":
						c, s := testutil.Pair(t, "tcp", "127.0.0.1:0")
						w, r = c, s
						target = c.(gatenet.Pollable)
						if onReader {
							target = s.(gatenet.Pollable)
						}
					case "pipe":
						pr, pw := bubblePipe(t)
						w, r = pw, pr
						target = pw
						if onReader {
							target = pr
						}
					}
					defer w.Close()
					if target != nil {
						require.NoError(t, gatenet.InjectFaults(target, f))
					}
					want := make([]byte, 3000)
					for i := range want {
						want[i] = byte(i)
					}
					go w.Write(want)
					got := make([]byte, len(want))
					_, err := io.ReadFull(r, got)
					require.NoError(t, err)
					require.Equal(t, want, got)
				})
			})
		}
	}
}

// TestSynctestUnixPairsDurable: every Unix stream pair made in a bubble
// is paired, so both ends park durably. The dialled end learnt no peer
// when it asked before the accept; if the accepted end then looked for it
// before it was recorded, neither found the other (2–9 of 300 pairs), and
// a read deadline of 50 ms took 50 ms of real time with the fake clock
// standing still.
func TestSynctestUnixPairsDurable(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		dir := t.TempDir()
		for i := range 300 {
			ln, err := gatenet.Listen("unix", dir+"/s"+strconv.Itoa(i))
			require.NoError(t, err)
			accepted := make(chan net.Conn, 1)
			go func() {
				s, err := ln.Accept()
				if err != nil {
					s = nil
				}
				accepted <- s
			}()
			c, err := gatenet.Dial("unix", ln.Addr().String())
			require.NoError(t, err)
			s := <-accepted
			require.NotNil(t, s)
			require.NoError(t, ln.Close())
			for _, end := range []net.Conn{c, s} {
				start := time.Now()
				require.NoError(t, end.SetReadDeadline(start.Add(50*time.Millisecond)))
				_, err := end.Read(make([]byte, 1))
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
				require.Equal(t, 50*time.Millisecond, time.Since(start), "pair %d: not paired in the bubble", i)
			}
			c.Close()
			s.Close()
		}
	})
}
