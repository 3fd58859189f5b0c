//go:build linux

package gatenet_test

// Helpers every kind of test here shares: a Read or Write started on its
// own goroutine, and the check that it is still blocked.

import (
	"io"
	"testing"
	"time"
)

// ioResult is one Read's or Write's outcome.
type ioResult struct {
	N   int
	Err error
}

// goRead starts r.Read(buf) and returns the channel its result arrives on.
func goRead(r io.Reader, buf []byte) <-chan ioResult {
	ch := make(chan ioResult, 1)
	go func() {
		n, err := r.Read(buf)
		ch <- ioResult{n, err}
	}()
	return ch
}

// goWrite starts w.Write(buf) and returns the channel its result arrives on.
func goWrite(w io.Writer, buf []byte) <-chan ioResult {
	ch := make(chan ioResult, 1)
	go func() {
		n, err := w.Write(buf)
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
