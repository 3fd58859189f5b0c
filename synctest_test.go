//go:build linux

package gatenet_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
	"github.com/gatenet/gatenet/tlstest"
)

// The tests of fake time for real descriptors (pollfd/bubble.go): each
// runs in a testing/synctest bubble and logs the bubble's fake elapsed
// time beside the wall time it took.

// inBubble runs f in a bubble under a watchdog and logs both clocks.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	wall := time.Now()
	var fake time.Duration
	testutil.Watchdog(t, 20*time.Second)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		defer func() {
			if t.Failed() { // runs before a bubble left blocked panics
				t.Logf("failed at %v fake: the default poller's counters %+v", time.Since(start), pollfd.Default().Stats())
			}
		}()
		f(t)
		fake = time.Since(start)
	})
	t.Logf("fake time %v, wall time %v", fake, time.Since(wall).Round(time.Microsecond))
}

// TestSynctestHTTPReadHeaderTimeout: a slowloris client sends one byte of
// a header; the server gives up on it at exactly ReadHeaderTimeout on the
// bubble's clock, answers 400 (as over net) and closes: the client reads
// EOF.
func TestSynctestHTTPReadHeaderTimeout(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{ReadHeaderTimeout: 30 * time.Second, Handler: http.NotFoundHandler()}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()

		c, err := gatenet.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		start := time.Now()
		_, err = c.Write([]byte("G"))
		require.NoError(t, err)
		rest, err := io.ReadAll(c)
		require.NoError(t, err, "the server's close is EOF")
		require.Contains(t, string(rest), "400 Bad Request", "net/http's answer to a header it gave up on")
		require.Equal(t, 30*time.Second, time.Since(start))
		require.NoError(t, c.Close())

		require.NoError(t, srv.Close())
		require.ErrorIs(t, <-served, http.ErrServerClosed)
	})
}

// TestSynctestTLSReadDeadline: a read deadline on a TLS pair fires at
// fake 10 s; the connection then reads what its peer writes.
func TestSynctestTLSReadDeadline(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		// Certificates issued on the bubble's clock (it starts in 2000):
		// the default CA's are valid from when the process made them.
		ca, err := tlstest.NewCA()
		require.NoError(t, err)
		leaf, err := ca.Leaf(tlstest.ECDSA)
		require.NoError(t, err)
		c, s := tlstest.Pair(t, &tls.Config{Certificates: []tls.Certificate{leaf}}, ca.ClientConfig())
		start := time.Now()
		require.NoError(t, s.SetReadDeadline(start.Add(10*time.Second)))
		buf := make([]byte, 16)
		_, err = s.Read(buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 10*time.Second, time.Since(start))

		require.NoError(t, s.SetReadDeadline(time.Time{}))
		go c.Write([]byte("after"))
		n, err := s.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "after", string(buf[:n]))
		require.Equal(t, 10*time.Second, time.Since(start), "the write woke the reader: no time passed")
	})
}

// TestSynctestPipeDeadline: a pipe's read deadline and a context timeout
// on its ReadContext, each 5 s of fake time.
func TestSynctestPipeDeadline(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer w.Close()
		defer r.Close()
		buf := make([]byte, 8)

		start := time.Now()
		require.NoError(t, r.SetReadDeadline(start.Add(5*time.Second)))
		_, err = r.Read(buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 5*time.Second, time.Since(start))
		require.NoError(t, r.SetReadDeadline(time.Time{}))

		start = time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		_, err = r.ReadContext(ctx, buf)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 5*time.Second, time.Since(start))

		_, err = w.Write([]byte("still"))
		require.NoError(t, err)
		n, err := r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "still", string(buf[:n]))
	})
}

// TestSynctestHTTPClientTimeout: a client's Timeout of 5 s against a
// handler that sleeps 10 s fails at fake 5 s. Then keep-alive connections
// idle in the client's pool: synctest.Wait returns while they are there
// (net's do not let a bubble idle: go.dev/issue/78492), and the bubble
// ends once the server has closed them.
func TestSynctestHTTPClientTimeout(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		mux := http.NewServeMux()
		mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
			select { // until the client hangs up
			case <-time.After(10 * time.Second):
			case <-r.Context().Done():
			}
		})
		mux.HandleFunc("/fast", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
		srv := &http.Server{Handler: mux}
		go srv.Serve(ln)
		url := "http://" + ln.Addr().String()
		client := &http.Client{
			Timeout:   5 * time.Second,
			Transport: &http.Transport{DialContext: new(gatenet.Dialer).DialContext},
		}

		start := time.Now()
		_, err = client.Get(url + "/slow")
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		require.True(t, ne.Timeout(), "%v", err)
		require.Equal(t, 5*time.Second, time.Since(start))

		for range 3 {
			resp, err := client.Get(url + "/fast")
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, "ok", string(body))
			resp.Body.Close()
		}
		synctest.Wait() // the pool's connections idle durably
		require.NoError(t, srv.Close())
	})
}

// TestSynctestWriteThenWait: synctest.Wait after a write returns only once
// the reader, woken by the write, has the data.
func TestSynctestWriteThenWait(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		for _, network := range []string{"tcp", "unix", "pipe"} {
			var r io.ReadCloser
			var w io.WriteCloser
			switch network {
			case "pipe":
				pr, pw, err := gatenet.Pipe()
				require.NoError(t, err)
				r, w = pr, pw
			default:
				addr := "127.0.0.1:0"
				if network == "unix" {
					addr = t.TempDir() + "/s"
				}
				ln, err := gatenet.Listen(network, addr)
				require.NoError(t, err)
				c, err := gatenet.Dial(network, ln.Addr().String())
				require.NoError(t, err)
				s, err := ln.Accept()
				require.NoError(t, err)
				require.NoError(t, ln.Close())
				r, w = s, c
			}
			got := make(chan string, 10)
			go func() {
				buf := make([]byte, 64)
				for {
					n, err := r.Read(buf)
					if err != nil {
						close(got)
						return
					}
					got <- string(buf[:n])
				}
			}()
			for _, msg := range []string{"one", "two", "three"} {
				_, err := w.Write([]byte(msg))
				require.NoError(t, err)
				synctest.Wait()
				require.Len(t, got, 1, "%s: after Wait the reader has %q", network, msg)
				require.Equal(t, msg, <-got)
			}
			require.NoError(t, w.Close())
			synctest.Wait()
			_, open := <-got
			require.False(t, open, "%s: the reader saw the end of the stream", network)
			require.NoError(t, r.Close())
		}
	})
}

// TestSynctestOutsidePeer: a connection to a listener made outside the
// bubble has a peer the bubble cannot see, so its waits are not durable:
// a read deadline set in the bubble fires on the real clock, and the
// bubble is never taken for deadlocked.
func TestSynctestOutsidePeer(t *testing.T) {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	wall := time.Now()
	inBubble(t, func(t *testing.T) {
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		_, err = c.Read(make([]byte, 1))
		require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "%v", err)
	})
	require.GreaterOrEqual(t, time.Since(wall), 50*time.Millisecond, "the deadline fired on the real clock")
	if c := <-accepted; c != nil {
		c.Close()
	}
}

// TestSynctestNetClient: a listener of the bubble that only net's clients
// dial waits as outside a bubble (their connections come with no wake from
// the bubble), so a net client is served, as before.
func TestSynctestNetClient(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.Copy(c, c)
			c.Close()
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		require.Equal(t, "net", sendRecv(t, c, c, "net"))
		require.NoError(t, c.Close())
		<-done
		require.NoError(t, ln.Close())
	})
}

// TestSynctestReadyQueue: a ReadyQueue made in a bubble works there (its
// Next waits are not durable: the drain loop, outside the bubble, queues
// the ready conns).
func TestSynctestReadyQueue(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		q := gatenet.NewReadyQueue()
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		s, err := ln.Accept()
		require.NoError(t, err)
		require.NoError(t, ln.Close())
		require.NoError(t, q.Add(s.(gatenet.Pollable)))
		_, err = c.Write([]byte("ready"))
		require.NoError(t, err)
		p, err := q.Next(t.Context())
		require.NoError(t, err)
		buf := make([]byte, 8)
		n, err := p.(net.Conn).Read(buf)
		require.NoError(t, err)
		require.Equal(t, "ready", string(buf[:n]))
		require.NoError(t, p.Close())
		require.NoError(t, c.Close())
		q.Close()
	})
}

// TestSynctestDeadlineClocks: a conn made outside a bubble gets a read
// deadline in one, on the bubble's clock, then others outside it, on the
// real clock: the bubble's timer is left behind (the runtime would throw
// if a goroutine outside the bubble reset or stopped it), and the real
// one fires.
func TestSynctestDeadlineClocks(t *testing.T) {
	c, s := testutil.TCPPair(t)
	inBubble(t, func(t *testing.T) {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Hour)))
	})
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Hour)))
	inBubble(t, func(t *testing.T) {
		require.NoError(t, s.SetReadDeadline(time.Time{})) // stops the real timer from the bubble
	})
}

// TestSynctestParksUnderSignals: a durable park stays durable while
// preemption signals keep interrupting system calls. The zero-timeout
// poll(2) that decides it fails with EINTR when one lands: taken for a
// failure, the park went as outside the bubble, whose clock then stopped
// until the real clock ran the read's deadline out (seen once in CI on a
// connected UDP pair). Each round's read must end at its writer's fake
// millisecond.
func TestSynctestParksUnderSignals(t *testing.T) {
	testutil.CheckLeaks(t)
	stop := testutil.PreemptStorm(t)
	defer stop()
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		buf := make([]byte, 1)
		for i := range 3000 {
			go func() {
				time.Sleep(time.Millisecond)
				w.Write([]byte{byte(i)})
			}()
			// On the fake clock; a park that is not durable waits for it
			// on the real one.
			require.NoError(t, r.SetReadDeadline(time.Now().Add(2*time.Second)))
			start := time.Now()
			_, err := r.Read(buf)
			require.NoError(t, err, "round %d", i)
			require.Equal(t, time.Millisecond, time.Since(start), "round %d", i)
		}
	})
}
