//go:build linux

package httptest_test

// A connection's life beyond a plain request: Server.Shutdown draining an
// in-flight request, Hijack handing over the gatenet conn, ServeContent of
// a 64 MiB file, and the keep-alive connection reused after net/http's
// background read was aborted (stdlib-behaviour checklist row 64).

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Shutdown on an http.Server serving a gatenet listener: the listener
// closes at once (Serve returns ErrServerClosed, new dials are refused),
// an idle keep-alive connection is closed, the in-flight request runs to
// completion while Shutdown waits, and afterwards Accept returns
// net.ErrClosed.
func TestShutdownDrains(t *testing.T) {
	begin(t)
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done "+r.URL.Path)
	})}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	addr := ln.Addr().String()

	// An idle keep-alive connection.
	requireIdleClosed := idleConn(t, addr, "/idle")

	// The in-flight request.
	tr := &http.Transport{DialContext: (&gatenet.Dialer{}).DialContext}
	defer tr.CloseIdleConnections()
	got := make(chan string, 1)
	go func() {
		res, err := (&http.Client{Transport: tr}).Get("http://" + addr + "/block")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- res.Status + " " + string(b)
	}()
	<-entered

	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- srv.Shutdown(context.Background()) }()
	require.ErrorIs(t, <-serveErr, http.ErrServerClosed)
	_, err = gatenet.Dial("tcp", addr)
	require.Error(t, err, "a dial after Shutdown closed the listener succeeded")
	requireIdleClosed()
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}

	close(release)
	require.Equal(t, "200 OK done /block", <-got)
	require.NoError(t, <-shutdownErr)
	_, err = ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "accept", op.Op)
}

// Hijack hands the handler the *gatenet.TCPConn itself, together with the
// bytes the server had already buffered; bytes then flow both ways, and
// CloseWrite on either side is seen as EOF by the other.
func TestHijack(t *testing.T) {
	begin(t)
	connType := make(chan string, 1)
	e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			connType <- "Hijack: " + err.Error()
			return
		}
		defer c.Close()
		connType <- fmt.Sprintf("%T", c)
		io.WriteString(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		// Echo, starting with what brw already buffered; then say bye.
		if _, err := io.Copy(c, brw); err != nil {
			return
		}
		io.WriteString(c, "bye")
		c.(*gatenet.TCPConn).CloseWrite()
		io.Copy(io.Discard, c) // until the client closes
	}), modeHTTP, nil)

	c := dialRaw(t, e.Addr())
	// The request and the first bytes of the new protocol in one write.
	_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nearly bytes|")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	require.Equal(t, "*gatenet.TCPConn", <-connType)

	payload := randomBytes(t, 4<<20)
	writeErr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.CloseWrite()
		}
		writeErr <- err
	}()
	got, err := io.ReadAll(br)
	require.NoError(t, err)
	require.NoError(t, <-writeErr)
	want := "early bytes|" + string(payload) + "bye"
	require.Equal(t, len(want), len(got))
	require.Equal(t, sha([]byte(want)), sha(got))
	require.NoError(t, c.Close())
	waitFor(t, "the hijacked connection to be forgotten", func() bool { return e.finished.Load() == e.accepted.Load() })
}

// http.ServeContent of a 64 MiB file arrives byte-exact, whole and as a
// range.
func TestServeContent64MiB(t *testing.T) {
	begin(t)
	const size = 64 << 20
	path := filepath.Join(t.TempDir(), "blob.bin")
	data := randomBytes(t, size)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	want := sha(data)
	e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, fi.Name(), fi.ModTime(), f)
	}), modeHTTP, nil)

	res, err := e.Client().Get(e.URL)
	require.NoError(t, err)
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.EqualValues(t, size, res.ContentLength)
	require.EqualValues(t, size, n)
	require.Equal(t, want, hex.EncodeToString(h.Sum(nil)))

	const from, to = 12_345_678, 45_678_900
	req, err := http.NewRequest(http.MethodGet, e.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, to))
	res, err = e.Client().Do(req)
	require.NoError(t, err)
	part, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusPartialContent, res.StatusCode)
	require.Equal(t, fmt.Sprintf("bytes %d-%d/%d", from, to, size), res.Header.Get("Content-Range"))
	require.Equal(t, sha(data[from:to+1]), sha(part))
	require.EqualValues(t, 1, e.dials.Load())
}

// Checklist row 64: once a handler has read the whole request body,
// net/http reads the connection in the background (a 1-byte Read parked in
// gatenet's poller) and, when the handler returns, aborts that read with a
// past read deadline, expecting a direct net.Error timeout, then clears
// the deadline and reuses the connection. Two sequential requests on one
// conn, the second after a handler that reads the body; also pipelined,
// where the background read takes the first byte of the next request.
func TestKeepAliveAfterBackgroundRead(t *testing.T) {
	begin(t)
	var mu sync.Mutex
	var remotes []string
	e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes = append(remotes, r.RemoteAddr)
		mu.Unlock()
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		// Give the background read time to park in the poller (a lower
		// bound: the test passes however long it takes).
		time.Sleep(10 * time.Millisecond)
		fmt.Fprintf(w, "%s %q", r.Method, b)
	}), modeHTTP, nil)

	t.Run("raw", func(t *testing.T) {
		c := dialRaw(t, e.Addr())
		br := bufio.NewReader(c)
		for _, step := range []struct {
			req  string
			want []string // the bodies of the responses
		}{
			{"POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", []string{`POST "hello"`}},
			{"GET /2 HTTP/1.1\r\nHost: x\r\n\r\n", []string{`GET ""`}},
			{"POST /3 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", []string{`POST "abc"`}},
			// Pipelined: the background read after /4's body consumes
			// the first byte of /5, which must not be lost.
			{"POST /4 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi" +
				"POST /5 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbye", []string{`POST "hi"`, `POST "bye"`}},
		} {
			_, err := io.WriteString(c, step.req)
			require.NoError(t, err)
			for _, want := range step.want {
				res, err := http.ReadResponse(br, nil)
				require.NoError(t, err)
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				require.Equal(t, want, string(b))
				require.False(t, res.Close, "the server closed the connection")
			}
		}
	})

	t.Run("client", func(t *testing.T) {
		for i := range 3 {
			var reused bool
			trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }}
			req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, e.URL, strings.NewReader("body"))
			require.NoError(t, err)
			res, err := e.Client().Do(req)
			require.NoError(t, err)
			b, err := io.ReadAll(res.Body)
			res.Body.Close()
			require.NoError(t, err)
			require.Equal(t, `POST "body"`, string(b))
			require.Equal(t, i > 0, reused, "request %d", i)
		}
	})

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, remotes, 8)
	for i, r := range remotes {
		want := remotes[0]
		if i >= 5 {
			want = remotes[5]
		}
		require.Equal(t, want, r, "request %d came on another connection", i)
	}
	require.EqualValues(t, 2, e.accepted.Load())
	require.Empty(t, e.Log.String())
}

// A client that gives up on a request cancels the handler's context: for
// HTTP/1.1 through net/http's background read seeing the connection close
// (EOF from gatenet), for HTTP/2 through RST_STREAM.
func TestClientGoneCancelsContext(t *testing.T) {
	begin(t)
	for _, mode := range []string{modeHTTP, modeH2} {
		t.Run(mode, func(t *testing.T) {
			entered, cause := make(chan struct{}, 1), make(chan error, 1)
			e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				<-r.Context().Done()
				cause <- context.Cause(r.Context())
			}), mode, nil)
			ctx, cancel := context.WithCancel(t.Context())
			go func() { <-entered; cancel() }()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL, nil)
			require.NoError(t, err)
			_, err = e.Client().Do(req)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, <-cause, context.Canceled)
		})
	}
}

// The server's timeouts are gatenet deadlines: IdleTimeout closes an idle
// keep-alive connection, WriteTimeout fails a handler's blocked write with
// a timeout.
func TestServerTimeouts(t *testing.T) {
	begin(t)
	writeErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/flood" {
			io.WriteString(w, "ok")
			return
		}
		buf := make([]byte, 1<<20)
		for {
			if _, err := w.Write(buf); err != nil {
				writeErr <- err
				return
			}
		}
	})

	// WriteTimeout bounds the response to "/" too, which must be written:
	// a server that a loaded machine kept from writing it in time closes
	// the connection instead, and a new one is tried with both timeouts
	// doubled.
	var e *env
	var requireIdleClosed func()
	var err error
	testutil.RetrySlow(t, 200*time.Millisecond, "the response to / was written", func(d time.Duration) bool {
		e = start(t, h, modeHTTP, func(ts *httptest.Server) {
			ts.Config.IdleTimeout = d / 2
			ts.Config.WriteTimeout = d
		})
		requireIdleClosed, err = tryIdleConn(t, e.Addr(), "/")
		if err != nil {
			e.Close()
			return true
		}
		return false
	})
	require.NoError(t, err)
	requireIdleClosed() // by IdleTimeout

	// A client that never reads: the handler's write times out.
	flood := dialRaw(t, e.Addr())
	io.WriteString(flood, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
	err = <-writeErr
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "%v", err)
	require.Contains(t, normalize(err.Error()), "write tcp ADDR->ADDR: i/o timeout")
}

// idleConn dials addr raw, GETs path and reads the whole response, which
// leaves an idle keep-alive connection. The function it returns checks
// that the server has closed that connection since (EOF, within a
// minute).
func idleConn(t testing.TB, addr, path string) (requireClosed func()) {
	t.Helper()
	requireClosed, err := tryIdleConn(t, addr, path)
	require.NoError(t, err)
	return requireClosed
}

// tryIdleConn is idleConn, returning the error of the request or of the
// response where idleConn fails t.
func tryIdleConn(t testing.TB, addr, path string) (requireClosed func(), err error) {
	t.Helper()
	c := dialRaw(t, addr)
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return nil, err
	}
	return func() {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := br.ReadByte()
		require.ErrorIs(t, err, io.EOF, "the idle connection was not closed")
	}, nil
}
