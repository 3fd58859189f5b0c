//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// A context bounds the whole call, also while it waits behind another
// goroutine's call on the same side: a Read parked on an idle conn holds
// the read lock, and a ReadContext queued behind it must still end when
// its context does.

// queuedBehind runs call on a goroutine of its own once blocker (started
// first) is parked, and returns call's error. The context's timeout is
// the only thing that can end call: blocker never returns until cleanup.
func queuedBehind(t *testing.T, blocker func(), call func(ctx context.Context) error) error {
	t.Helper()
	go blocker()
	time.Sleep(20 * time.Millisecond) // lets it park; if it has not, call still must end
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("watchdog: the call outlived its context behind a parked call")
		return nil
	}
}

func TestContextBoundsQueuedCall(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	for name, mk := range waitPairs(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("ReadContext", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, w := mk(t)
				blocked := make(chan error, 1)
				err := queuedBehind(t, func() { _, err := r.Read(make([]byte, 1)); blocked <- err },
					func(ctx context.Context) error { _, err := r.ReadContext(ctx, make([]byte, 1)); return err })
				require.ErrorIs(t, err, context.DeadlineExceeded)
				require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
				// The parked Read still gets the byte, and the conn reads on.
				_, err = w.Write([]byte("ab"))
				require.NoError(t, err)
				require.NoError(t, <-blocked)
				buf := make([]byte, 1)
				_, err = r.Read(buf)
				require.NoError(t, err)
				require.Equal(t, "b", string(buf))
			})
			t.Run("WaitRead", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, w := mk(t)
				blocked := make(chan error, 1)
				err := queuedBehind(t, func() { _, err := r.Read(make([]byte, 1)); blocked <- err },
					func(ctx context.Context) error { return r.WaitRead(ctx) })
				require.ErrorIs(t, err, context.DeadlineExceeded)
				_, err = w.Write([]byte("a"))
				require.NoError(t, err)
				require.NoError(t, <-blocked)
			})
			t.Run("Close", func(t *testing.T) {
				testutil.CheckLeaks(t)
				r, _ := mk(t)
				// A queued call with a live context ends at Close, as a
				// plain queued Read does.
				go r.Read(make([]byte, 1))
				time.Sleep(20 * time.Millisecond)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() { _, err := r.ReadContext(ctx, make([]byte, 1)); done <- err }()
				time.Sleep(20 * time.Millisecond)
				require.NoError(t, r.Close())
				err := <-done
				require.True(t, errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed), "%v", err)
			})
		})
	}
}

func TestContextBoundsQueuedWriteAndAccept(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	t.Run("WriteContext", func(t *testing.T) {
		testutil.CheckLeaks(t)
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		// A Write bigger than the pipe parks holding the write lock: it
		// holds it from its first byte in the pipe on.
		blocked := make(chan error, 1)
		go func() { _, err := w.Write(make([]byte, 4<<20)); blocked <- err }()
		waitPipeFull(t, r)
		err = queuedBehind(t, func() {},
			func(ctx context.Context) error { _, err := w.WriteContext(ctx, []byte("x")); return err })
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var pe *os.PathError
		require.True(t, errors.As(err, &pe), "%T", err)
		require.Equal(t, "write", pe.Op)
		require.NoError(t, r.Close())
		require.Error(t, <-blocked)
	})
	t.Run("AcceptContext", func(t *testing.T) {
		testutil.CheckLeaks(t)
		ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		l := ln.(*gatenet.TCPListener)
		blocked := make(chan error, 1)
		err = queuedBehind(t, func() { _, err := l.Accept(); blocked <- err },
			func(ctx context.Context) error { _, err := l.AcceptContext(ctx); return err })
		require.ErrorIs(t, err, context.DeadlineExceeded)
		var op *net.OpError
		require.True(t, errors.As(err, &op), "%T", err)
		require.Equal(t, "accept", op.Op)
		require.NoError(t, l.Close())
		require.ErrorIs(t, <-blocked, net.ErrClosed)
	})
}
