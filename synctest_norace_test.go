//go:build linux && !race

package gatenet_test

import (
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestSynctestPlainIO: what README's Limitations promise works inside a
// testing/synctest bubble: a pipe and a loopback TCP conn, read and
// written, with no deadline. A waiter parked on its gate must not count as
// durably blocked (synctest would report a deadlock), and nothing gatenet
// starts may outlive the bubble: the test first waits for the default
// poller's drain loop to have exited, so the bubble's first descriptor
// starts it inside the bubble, and the bubble can only end once that loop
// has exited again (synctest waits for every goroutine it owns). Not in
// race builds: there a waiter parks on a channel made in the bubble
// (pollfd/sema_chan.go), which synctest counts as durably blocked.
func TestSynctestPlainIO(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	p := pollfd.Default()
	testutil.WaitPollerIdle(t, p)
	starts := p.Stats().DrainStarts
	defer func() { require.Greater(t, p.Stats().DrainStarts, starts, "no drain loop started in the bubble") }()
	synctest.Test(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		go func() {
			w.Write([]byte("through a pipe"))
			w.Close()
		}()
		got, err := io.ReadAll(r)
		require.NoError(t, err)
		require.Equal(t, "through a pipe", string(got))
		require.NoError(t, r.Close())

		ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				io.Copy(c, c) // echo until the client closes
				c.Close()
			}
			accepted <- c
		}()
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = c.Write([]byte("echo"))
		require.NoError(t, err)
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, "echo", string(buf))
		require.NoError(t, c.Close())
		<-accepted
		require.NoError(t, ln.Close())
	})
}
