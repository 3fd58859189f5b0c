//go:build linux

package reliability_test

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestSlowClients: 1,000 connections to an http.Server on a gatenet
// listener each send one byte of a request header every 100 ms, a header
// that never ends (slowloris). With ReadHeaderTimeout the server must cut
// every one off (the client reads net/http's "400 Bad Request", as with a
// net listener, then EOF, or ECONNRESET when unread bytes were in flight),
// and none before the timeout; memory and goroutines return to
// where they were.
//
// One goroutine drives every client from a ticker: it writes each live
// connection's next byte and drains it with a non-blocking recv until it
// sees EOF or a reset, so the client side adds no goroutine per connection.
func TestSlowClients(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	const (
		clients       = 1000
		headerTimeout = time.Second
		tick          = 100 * time.Millisecond
		loadBound     = 30 * time.Second // the load loop's bound: all must be cut off by then
		// Generous bounds (race-detector builds use several times the
		// memory of normal ones): the peak with 1,000 conns held, and
		// what may remain after everything is closed.
		peakBound  = 512 << 20
		afterBound = 32 << 20
	)
	goroutinesBefore := runtime.NumGoroutine()
	heapBefore := heapInuse()

	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("a request completed: %s %s", r.Method, r.URL)
		}),
		ReadHeaderTimeout: headerTimeout,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer srv.Close()

	// A header that never completes: a request line, then header lines
	// forever (never the empty line that ends them).
	header := []byte("GET / HTTP/1.1\r\nHost: slow\r\n")
	for len(header) < 4096 {
		header = append(header, "X-Slow: abcdefgh\r\n"...)
	}

	type client struct {
		c       *gatenet.TCPConn
		raw     syscall.RawConn
		started time.Time // before Dial: the server's timer cannot start earlier
		cutAt   time.Time // when the driver saw the cut (zero: still open)
		how     string
		sent    int
		// What the server said before closing: net/http answers a header
		// timeout with "400 Bad Request" (for net's listeners too).
		resp      []byte
		firstData time.Time
	}
	cs := make([]*client, 0, clients)
	defer func() {
		for _, c := range cs {
			c.c.Close()
		}
	}()
	for range clients {
		started := time.Now()
		c, err := gatenet.Dial("tcp4", ln.Addr().String())
		require.NoError(t, err)
		tc := c.(*gatenet.TCPConn)
		raw, err := tc.SyscallConn()
		require.NoError(t, err)
		cs = append(cs, &client{c: tc, raw: raw, started: started})
	}

	// check drains what the server sent c, without blocking, and reports
	// whether the server has closed it: EOF, or a reset.
	check := func(c *client) (string, bool) {
		var b [512]byte
		for {
			var n int
			var rerr error
			if err := c.raw.Control(func(fd uintptr) {
				n, _, rerr = unix.Recvfrom(int(fd), b[:], unix.MSG_DONTWAIT)
			}); err != nil {
				t.Fatalf("control: %v", err)
			}
			switch {
			case rerr == nil && n == 0:
				return "EOF", true
			case rerr == nil:
				if c.resp == nil {
					c.firstData = time.Now()
				}
				c.resp = append(c.resp, b[:n]...)
				require.Less(t, len(c.resp), 4096, "the server keeps sending")
			case errors.Is(rerr, unix.EAGAIN):
				return "", false
			case errors.Is(rerr, unix.ECONNRESET):
				return "ECONNRESET", true
			default:
				t.Fatalf("recv: %v", rerr)
			}
		}
	}

	var peak uint64
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	loadStart := time.Now()
	open := clients
	for open > 0 && time.Since(loadStart) < loadBound {
		<-ticker.C
		for _, c := range cs {
			if !c.cutAt.IsZero() {
				continue
			}
			how, cut := check(c)
			if !cut {
				c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
				_, err := c.c.Write(header[c.sent%len(header) : c.sent%len(header)+1])
				switch {
				case err == nil:
					c.sent++
					continue
				case errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
					how, cut = "write: "+err.Error(), true
				default:
					t.Fatalf("write: %v", err)
				}
			}
			c.cutAt = time.Now()
			c.how = how
			open--
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if h := ms.HeapInuse; h > peak {
			peak = h
		}
	}
	loaded := time.Since(loadStart)
	require.Zero(t, open, "connections still open %v after the load began (ReadHeaderTimeout %v)", loaded, headerTimeout)

	hows := map[string]int{}
	var earliest, latest time.Duration
	for i, c := range cs {
		cut := c.cutAt
		if !c.firstData.IsZero() {
			cut = c.firstData
		}
		after := cut.Sub(c.started)
		if len(c.resp) > 0 {
			require.True(t, bytes.HasPrefix(c.resp, []byte("HTTP/1.1 400 ")), "client %d: the server answered %q", i, c.resp)
			hows["400 response"]++
		}
		require.GreaterOrEqual(t, after, headerTimeout, "client %d cut off before ReadHeaderTimeout (after %d bytes)", i, c.sent)
		if i == 0 || after < earliest {
			earliest = after
		}
		latest = max(latest, after)
		hows[c.how]++
	}
	for _, c := range cs {
		c.c.Close()
	}
	cs = nil
	srv.Close()
	require.ErrorIs(t, <-served, http.ErrServerClosed)

	// Goroutines back to the baseline (the server's conn goroutines end
	// asynchronously after Close), then the heap.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutinesBefore && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), goroutinesBefore, "goroutines did not return to the baseline")
	heapAfter := heapInuse()
	t.Logf("%d clients cut off %v to %v after their dial (ReadHeaderTimeout %v, checked every %v): %v; HeapInuse %d KiB before, %d KiB peak, %d KiB after",
		clients, earliest.Round(time.Millisecond), latest.Round(time.Millisecond), headerTimeout, tick, hows, heapBefore>>10, peak>>10, heapAfter>>10)
	require.Less(t, peak, uint64(peakBound), "HeapInuse with %d slow clients", clients)
	require.Less(t, int64(heapAfter)-int64(heapBefore), int64(afterBound), "HeapInuse grew and stayed grown")
}

// heapInuse is HeapInuse after collections enough to empty sync.Pools
// (a pool's contents survive one GC in its victim cache).
func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
