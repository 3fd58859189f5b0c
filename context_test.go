//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// The buffer-less and context-aware calls: WaitRead, WaitWrite,
// ReadContext, WriteContext, AcceptContext.

// waiter is what conns and Files share of the calls under test.
type waiter interface {
	io.ReadWriteCloser
	WaitRead(context.Context) error
	WaitWrite(context.Context) error
	ReadContext(context.Context, []byte) (int, error)
	WriteContext(context.Context, []byte) (int, error)
	SetReadDeadline(time.Time) error
}

// waitPair gives a connected (reader, writer) pair of each kind.
func waitPairs(t *testing.T) map[string]func(t *testing.T) (r waiter, w io.WriteCloser) {
	return map[string]func(t *testing.T) (waiter, io.WriteCloser){
		"tcp": func(t *testing.T) (waiter, io.WriteCloser) {
			c, s := gatenetTCPPair(t)
			return c, s
		},
		"pipe": func(t *testing.T) (waiter, io.WriteCloser) {
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			t.Cleanup(func() { r.Close(); w.Close() })
			return r, w
		},
	}
}

// gatenetTCPPair is testutil.TCPPair, under the name these tests use.
var gatenetTCPPair = testutil.TCPPair

// waitingRead starts w.WaitRead(ctx) on a goroutine of its own and
// returns the channel its result arrives on, once nothing has arrived
// there for a while (a lower bound only: it is still waiting).
func waitingRead(t *testing.T, ctx context.Context, w waiter) <-chan error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- w.WaitRead(ctx) }()
	select {
	case err := <-ch:
		t.Fatalf("returned early: %v", err)
	case <-time.After(30 * time.Millisecond):
	}
	return ch
}

func TestWaitRead(t *testing.T) {
	for name, mk := range waitPairs(t) {
		t.Run(name, func(t *testing.T) {
			testutil.Watchdog(t, 2*time.Minute)
			t.Run("Data", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, w := mk(t)
				done := waitingRead(t, context.Background(), r)
				_, err := w.Write([]byte("abc"))
				require.NoError(t, err)
				require.NoError(t, <-done)
				// Nothing consumed; and already-readable data returns at once.
				require.NoError(t, r.WaitRead(context.Background()))
				buf := make([]byte, 8)
				n, err := r.Read(buf)
				require.NoError(t, err)
				require.Equal(t, "abc", string(buf[:n]))
			})
			t.Run("Canceled", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, w := mk(t)
				ctx, cancel := context.WithCancel(context.Background())
				done := waitingRead(t, ctx, r)
				cancel()
				err := <-done
				require.ErrorIs(t, err, context.Canceled)
				// Still usable: data written later is read normally.
				_, err = w.Write([]byte("x"))
				require.NoError(t, err)
				buf := make([]byte, 1)
				_, err = r.Read(buf)
				require.NoError(t, err)
				// An already-cancelled context returns at once.
				require.ErrorIs(t, r.WaitRead(ctx), context.Canceled)
			})
			t.Run("Deadline", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, _ := mk(t)
				require.NoError(t, r.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
				err := r.WaitRead(context.Background())
				require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			})
			t.Run("Close", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, _ := mk(t)
				done := waitingRead(t, context.Background(), r)
				require.NoError(t, r.Close())
				err := <-done
				require.True(t, errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed), "%v", err)
			})
			t.Run("PeerEOF", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, w := mk(t)
				done := waitingRead(t, context.Background(), r)
				require.NoError(t, w.Close())
				require.NoError(t, <-done)
				n, err := r.Read(make([]byte, 4))
				require.Equal(t, 0, n)
				require.Equal(t, io.EOF, err)
			})
		})
	}
}

func TestReadContext(t *testing.T) {
	for name, mk := range waitPairs(t) {
		t.Run(name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 2*time.Minute)
			r, w := mk(t)
			ctx, cancel := context.WithCancel(context.Background())
			type res struct {
				n   int
				err error
			}
			ch := make(chan res, 1)
			buf := make([]byte, 8)
			go func() {
				n, err := r.ReadContext(ctx, buf)
				ch <- res{n, err}
			}()
			time.Sleep(20 * time.Millisecond)
			cancel()
			got := <-ch
			require.Equal(t, 0, got.n)
			require.ErrorIs(t, got.err, context.Canceled)
			if name == "tcp" {
				var op *net.OpError
				require.True(t, errors.As(got.err, &op), "%T", got.err)
				require.Equal(t, "read", op.Op)
			}
			// The next Read gets data that arrives later.
			_, err := w.Write([]byte("later"))
			require.NoError(t, err)
			n, err := r.Read(buf)
			require.NoError(t, err)
			require.Equal(t, "later", string(buf[:n]))
			// Deadlines set before still behave: an expired one wins.
			require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
			_, err = r.ReadContext(context.Background(), buf)
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			require.NoError(t, r.SetReadDeadline(time.Time{}))
			// A context deadline ends the wait with DeadlineExceeded.
			dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer dcancel()
			_, err = r.ReadContext(dctx, buf)
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
	}
}

func TestWriteContext(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	// Fill the pipe, then a WriteContext parks until cancelled and reports
	// what it wrote.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	n, err := w.WriteContext(ctx, make([]byte, 1<<20))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Greater(t, n, 0)
	require.Less(t, n, 1<<20)
	// WaitWrite parks while full and returns once the reader drains.
	done := make(chan error, 1)
	go func() { done <- w.WaitWrite(context.Background()) }()
	go io.CopyN(io.Discard, r, int64(n))
	require.NoError(t, <-done)
}

func TestAcceptContext(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	l := ln.(*gatenet.TCPListener)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = l.AcceptContext(ctx)
	require.ErrorIs(t, err, context.Canceled)
	var op *net.OpError
	require.True(t, errors.As(err, &op))
	require.Equal(t, "accept", op.Op)
	// The listener is still usable, and WaitRead sees a pending connection.
	c, err := gatenet.Dial("tcp4", l.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, l.WaitRead(context.Background()))
	s, err := l.AcceptContext(context.Background())
	require.NoError(t, err)
	s.Close()
}

// TestWaitReadNoStaleEdge: WaitRead returns only when a Read would not
// block. The edge of bytes a Read already took can reach the gate late,
// after the next WaitRead's Prepare; that WaitRead returned nil with
// nothing to read (up to 1 round in 8 under the dedicated strategy), and
// a listener's with no connection pending. Each round reads what was
// sent, then waits with a short context, which must end the wait.
func TestWaitReadNoStaleEdge(t *testing.T) {
	testutil.Watchdog(t, 5*time.Minute)
	const rounds = 150
	buf := make([]byte, 64)
	idle := func(t *testing.T, w interface{ WaitRead(context.Context) error }, round int) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		require.ErrorIs(t, w.WaitRead(ctx), context.DeadlineExceeded, "round %d: WaitRead returned with nothing there", round)
	}
	testutil.EachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		c, s, ln := sockPairOn(t, p, "tcp")
		r, w := newPipeOn(t, p)
		for name, pair := range map[string]struct {
			r waiter
			w io.Writer
		}{"tcp": {s.(waiter), c}, "pipe": {r, w}} {
			for i := range rounds {
				_, err := pair.w.Write([]byte("data"))
				require.NoError(t, err)
				require.NoError(t, pair.r.WaitRead(context.Background()), name)
				_, err = pair.r.Read(buf)
				require.NoError(t, err, name)
				idle(t, pair.r, i)
			}
		}
		d := gatenet.Dialer{Poller: p}
		lw := ln.(interface{ WaitRead(context.Context) error })
		for i := range rounds / 3 {
			dc, err := d.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			require.NoError(t, lw.WaitRead(context.Background()))
			ac, err := ln.Accept()
			require.NoError(t, err)
			dc.Close()
			ac.Close()
			idle(t, lw, i)
		}
	})
}

// TestWaitReadShutDatagram: a datagram socket whose reading was shut down
// is readable to poll(2) for good, yet a Read still finds nothing and
// waits (as net's does); WaitRead, which returns when a Read would not
// block, waits too, and returns once a datagram is queued. A stream's
// shut-down read side is ready: its Read returns io.EOF.
func TestWaitReadShutDatagram(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	dir := t.TempDir()
	s, err := gatenet.ListenUnixgram("unixgram", &net.UnixAddr{Name: dir + "/s", Net: "unixgram"})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.CloseRead())
	require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Millisecond)))
	_, err = s.Read(make([]byte, 8))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the Read waits")
	require.NoError(t, s.SetReadDeadline(time.Time{}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.WaitRead(ctx), context.DeadlineExceeded, "so does WaitRead")

	c, srv := testutil.TCPPair(t)
	defer c.Close()
	defer srv.Close()
	require.NoError(t, srv.CloseRead())
	require.NoError(t, srv.WaitRead(context.Background()), "a stream's Read returns io.EOF")
	_, err = srv.Read(make([]byte, 8))
	require.ErrorIs(t, err, io.EOF)
}

// TestWaitWrongEnd: WaitRead on a pipe's write end and WaitWrite on its
// read end return at once, since the Read or Write they announce fails at
// once (EBADF); they used to park until a deadline, context or Close.
func TestWaitWrongEnd(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for range 2 { // the second from the access mode kept
		require.NoError(t, w.WaitRead(context.Background()))
		_, err = w.Read(make([]byte, 1))
		require.ErrorIs(t, err, syscall.EBADF)
		require.NoError(t, r.WaitWrite(context.Background())) // poll(2) never says POLLOUT for a read end
		_, err = r.Write([]byte("x"))
		require.ErrorIs(t, err, syscall.EBADF)
	}
}

func TestWaitReadRegularFileAndNil(t *testing.T) {
	testutil.CheckLeaks(t)
	f, err := gatenet.OpenFile(t.TempDir()+"/f", os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.WaitRead(context.Background())) // always ready
	//lint:ignore SA1012 a nil context is documented to mean Background: that is what is tested
	require.NoError(t, f.WaitWrite(nil))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	requirePathError(t, f.WaitRead(done), "read", f.Name(), context.Canceled) // a done context fails at once, as on a pipe
	requirePathError(t, f.WaitWrite(done), "write", f.Name(), context.Canceled)
	require.Equal(t, os.ErrInvalid, (*gatenet.File)(nil).WaitRead(context.Background()))
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.WaitRead(context.Background()), os.ErrClosed)
}
