//go:build linux

package gatenet_test

import (
	"context"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
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
