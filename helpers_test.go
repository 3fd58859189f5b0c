//go:build linux

package gatenet_test

// Helpers every kind of test here shares: a Read or Write started on its
// own goroutine, the check that it is still blocked, and a message sent
// across a stream.

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ioResult is one Read's or Write's outcome.
type ioResult struct {
	N   int
	Err error
}

// goRead starts r.Read(buf) and returns the channel its result arrives on.
func goRead(r io.Reader, buf []byte) <-chan ioResult { return goIO(r.Read, buf) }

// goWrite starts w.Write(buf) and returns the channel its result arrives on.
func goWrite(w io.Writer, buf []byte) <-chan ioResult { return goIO(w.Write, buf) }

// goIO starts op(buf), a Read or a Write, on a goroutine of its own and
// returns the channel its result arrives on.
func goIO(op func([]byte) (int, error), buf []byte) <-chan ioResult {
	ch := make(chan ioResult, 1)
	go func() {
		n, err := op(buf)
		ch <- ioResult{n, err}
	}()
	return ch
}

// requireStillBlocked asserts nothing arrives on ch for d: a lower bound,
// never an upper one.
func requireStillBlocked(t testing.TB, ch <-chan ioResult, d time.Duration, what string) {
	t.Helper()
	select {
	case res := <-ch:
		t.Fatalf("%s returned early: n=%d err=%v", what, res.N, res.Err)
	case <-time.After(d):
	}
}

// sendRecv writes msg to w and reads as many bytes from r (the stream's
// other end, or w's own for an echo), failing t on an error of either; it
// returns what r delivered.
func sendRecv(t testing.TB, w io.Writer, r io.Reader, msg string) string {
	t.Helper()
	_, err := w.Write([]byte(msg))
	require.NoError(t, err)
	buf := make([]byte, len(msg))
	_, err = io.ReadFull(r, buf)
	require.NoError(t, err)
	return string(buf)
}
