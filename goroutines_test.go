//go:build linux

package gatenet_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestNoGoroutineWhenIdle: a program that has closed every conn, listener
// and pipe has no gatenet goroutine left, so goleak.VerifyNone passes with
// no option naming gatenet — as it does for net, whose poller keeps none.
// (The default poller's drain loop, of whichever strategy, exits once
// nothing is registered: pollfd/drain.go.)
func TestNoGoroutineWhenIdle(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	p := pollfd.Default()
	testutil.WaitPollerIdle(t, p) // earlier tests' loop may still linger
	baseline := goleak.IgnoreCurrent()
	starts := p.Stats().DrainStarts

	// A TCP round trip, a pipe read that times out and one that Close
	// ends: the loop runs for all of it.
	client, server := testutil.TCPPair(t)
	sendRecv(t, client, server, "ping")
	require.NoError(t, client.Close())
	require.NoError(t, server.Close())

	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	buf := make([]byte, 4)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err = r.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, r.SetReadDeadline(time.Time{}))
	done := make(chan error, 1)
	go func() { _, err := r.Read(buf); done <- err }()
	time.Sleep(10 * time.Millisecond) // usually parked by now; either way Close ends it
	require.NoError(t, r.Close())
	require.True(t, errors.Is(<-done, os.ErrClosed))
	require.NoError(t, w.Close())

	require.Greater(t, p.Stats().DrainStarts, starts, "the drain loop did not run")
	// goleak retries for about 400 ms; the loop lingers 5 ms.
	goleak.VerifyNone(t, baseline)
	require.Zero(t, p.Stats().DrainLoops)
}
