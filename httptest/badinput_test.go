//go:build linux

package httptest_test

// Bad input, each case on a net/http/httptest server (on net) and on this
// package's (on gatenet) with the same configuration: garbage instead of a
// request or a ClientHello, a client that connects and sends nothing or
// stalls mid-handshake, one that disconnects mid-request or mid-response,
// oversized headers. The server must answer (or not) and log exactly as
// it does on net, close that connection, and go on serving; nothing leaks.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	stdhttptest "net/http/httptest"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
	"github.com/gatenet/gatenet/internal/testutil"
)

// badObs is what a case observes, with addresses normalized to ADDR.
type badObs struct {
	Response string   // the first line the server sent, "" for none
	Closed   bool     // the server closed the connection (EOF or reset)
	Log      []string // the server's ErrorLog lines
	Handler  string   // what the handler saw, for cases that reach it
}

// badServer is one stack's server for the bad-input cases.
type badServer struct {
	addr    string
	client  *http.Client
	log     *syncBuffer
	handled chan string // one entry per /upload or /big request
}

type badCase struct {
	name    string
	tls     bool
	handler bool                                   // the case reaches the handler
	timeout bool                                   // the server's ReadHeaderTimeout ends it
	send    func(t *testing.T, c *gatenet.TCPConn) // what the client does
	want    badObs                                 // Log entries are regexps
}

var badCases = []badCase{
	{name: "garbage", send: write("\x00\x01\x02 this is not HTTP \xff\xfe\r\n\r\n"),
		want: badObs{Response: "HTTP/1.1 400 Bad Request", Closed: true}},
	{name: "silent", timeout: true, send: sendNothing,
		want: badObs{Closed: true}},
	{name: "partial-headers", send: writeThenHangUp("GET / HTTP/1.1\r\nHost: x\r\nX-Partial: "),
		want: badObs{Response: "HTTP/1.1 400 Bad Request", Closed: true}},
	{name: "oversized-headers", send: write("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"),
		want: badObs{Response: "HTTP/1.1 431 Request Header Fields Too Large", Closed: true}},
	{name: "disconnect-mid-body", handler: true,
		send: writeThenHangUp("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("b", 1000)),
		want: badObs{Response: "HTTP/1.1 400 Bad Request", Closed: true, Handler: "unexpected EOF"}},
	{name: "disconnect-mid-response", handler: true, send: disconnectMidResponse,
		want: badObs{Handler: "write error"}},
	{name: "tls-garbage", tls: true, send: write("\x00\x01\x02 this is not TLS \xff\xfe\r\n\r\n"),
		want: badObs{Closed: true, Log: []string{`^http: TLS handshake error from ADDR: tls: first record does not look like a TLS handshake$`}}},
	{name: "tls-plain-http", tls: true, send: write("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		want: badObs{Response: "HTTP/1.0 400 Bad Request", Closed: true, Log: []string{`^http: TLS handshake error from ADDR: client sent an HTTP request to an HTTPS server$`}}},
	{name: "tls-silent", tls: true, timeout: true, send: sendNothing,
		want: badObs{Closed: true, Log: []string{`^http: TLS handshake error from ADDR: read tcp ADDR->ADDR: i/o timeout$`}}},
	// A handshake record header announcing 512 bytes, then 10 of them.
	{name: "tls-stall-mid-handshake", tls: true, timeout: true, send: write("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03abcde"),
		want: badObs{Closed: true, Log: []string{`^http: TLS handshake error from ADDR: read tcp ADDR->ADDR: i/o timeout$`}}},
	{name: "tls-disconnect-mid-handshake", tls: true, send: writeThenHangUp("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03abcde"),
		want: badObs{Closed: true, Log: []string{`^http: TLS handshake error from ADDR: (unexpected )?EOF$`}}},
}

// write sends s in the background (the server may stop reading before
// the end of it).
func write(s string) func(t *testing.T, c *gatenet.TCPConn) {
	return func(t *testing.T, c *gatenet.TCPConn) { go c.Write([]byte(s)) }
}

// writeThenHangUp sends s, then shuts down the sending side.
func writeThenHangUp(s string) func(t *testing.T, c *gatenet.TCPConn) {
	return func(t *testing.T, c *gatenet.TCPConn) {
		_, err := io.WriteString(c, s)
		require.NoError(t, err)
		require.NoError(t, c.CloseWrite())
	}
}

func sendNothing(*testing.T, *gatenet.TCPConn) {}

// disconnectMidResponse reads the start of a 64 MiB response, then resets
// the connection.
func disconnectMidResponse(t *testing.T, c *gatenet.TCPConn) {
	_, err := io.WriteString(c, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	_, err = io.ReadFull(c, make([]byte, 64<<10))
	require.NoError(t, err)
	require.NoError(t, c.SetLinger(0))
	require.NoError(t, c.Close())
}

var addrRE = regexp.MustCompile(`(127\.0\.0\.1|\[::1\]):\d+`)

func normalize(s string) string { return addrRE.ReplaceAllString(s, "ADDR") }

// logLines counts the lines of an error log.
func logLines(log string) int {
	if log = strings.TrimSpace(log); log == "" {
		return 0
	}
	return strings.Count(log, "\n") + 1
}

// badHandler serves "/" (the health check), /upload (reads the body) and
// /big (64 MiB), reporting what /upload and /big saw.
func badHandler(handled chan<- string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/upload":
			_, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				handled <- normalize(err.Error())
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			handled <- "ok"
		case "/big":
			chunk := make([]byte, 32<<10)
			for range (64 << 20) / len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					handled <- "write error"
					return
				}
			}
			handled <- "wrote it all"
		default:
			io.WriteString(w, "ok")
		}
	}
}

// badConfig configures s for tc. The ReadHeaderTimeout (also the TLS
// handshake's) is short only where it is to end the case: elsewhere a
// server that a loaded machine kept from reading what the client sent
// within it would time out instead of answering, and the case would see
// that, not the answer; a minute is then a hang detector.
func badConfig(s *http.Server, tc badCase) {
	s.ReadHeaderTimeout = time.Minute
	if tc.timeout {
		s.ReadHeaderTimeout = 200 * time.Millisecond
	}
	s.MaxHeaderBytes = 4096
}

func runBadCase(t *testing.T, tc badCase, s badServer) badObs {
	c := dialRaw(t, s.addr)
	tc.send(t, c)
	var obs badObs
	if tc.name != "disconnect-mid-response" {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		got, err := io.ReadAll(c)
		if i := strings.Index(string(got), "\r\n"); i >= 0 {
			obs.Response = string(got[:i])
		}
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the server never closed the connection")
		obs.Closed = err == nil || errors.Is(err, syscall.ECONNRESET)
	}
	if tc.handler {
		obs.Handler = <-s.handled
	}
	// The server goes on serving.
	scheme := "http://"
	if tc.tls {
		scheme = "https://"
	}
	// The server's ReadHeaderTimeout (200 ms in the cases it ends) is also
	// its TLS handshake timeout, and it applies to the health check's
	// connection too: a handshake the scheduler stretches past it fails
	// with the server logging "TLS handshake error from <the check's
	// address>: ... i/o timeout"; a plain request's headers read past it
	// end with the connection closed, and no line. Such an attempt is
	// retried (a few times) and its line set aside; any other failure, or
	// any other line, fails the case.
	var timedOut []string // the local addresses of attempts the server timed out
	var body []byte
	for attempt := 1; ; attempt++ {
		var local string
		tr := s.client.Transport.(*http.Transport).Clone()
		tr.DisableKeepAlives = true
		dial := tr.DialContext
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err == nil {
				local = c.LocalAddr().String()
			}
			return c, err
		}
		res, err := (&http.Client{Transport: tr}).Get(scheme + s.addr)
		if err == nil {
			body, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		tr.CloseIdleConnections()
		if err == nil {
			break
		}
		require.True(t, tc.timeout && local != "" && attempt < 5, "health check, attempt %d: %v", attempt, err)
		t.Logf("health check, attempt %d, from %s: %v (retried)", attempt, local, err)
		if tc.tls { // a plain request's timeout leaves no line
			timedOut = append(timedOut, local)
		}
	}
	require.Equal(t, "ok", string(body))
	// net/http logs a failed handshake after it has closed the connection
	// (tls-plain-http: it writes the 400, closes, then logs), so the line
	// may come after everything above: wait for the lines the case
	// expects, within a watchdog's time.
	for limit := time.Now().Add(10 * time.Second); logLines(s.log.String()) < len(tc.want.Log)+len(timedOut) && time.Now().Before(limit); {
		time.Sleep(5 * time.Millisecond)
	}
	if l := strings.TrimSpace(s.log.String()); l != "" {
	lines:
		for _, line := range strings.Split(l, "\n") {
			for i, a := range timedOut {
				if regexp.MustCompile(`^http: TLS handshake error from ` + regexp.QuoteMeta(a) + `: (read|write) tcp \S+: i/o timeout$`).MatchString(line) {
					timedOut = append(timedOut[:i], timedOut[i+1:]...)
					continue lines
				}
			}
			obs.Log = append(obs.Log, normalize(line))
		}
	}
	require.Empty(t, timedOut, "failed health checks the server did not time out")
	return obs
}

func TestBadInput(t *testing.T) {
	for _, tc := range badCases {
		t.Run(tc.name, func(t *testing.T) {
			var netObs badObs
			netOK := t.Run("net", func(t *testing.T) {
				begin(t)
				handled := make(chan string, 4)
				ts := stdhttptest.NewUnstartedServer(badHandler(handled))
				buf := new(syncBuffer)
				ts.Config.ErrorLog = log.New(buf, "", 0)
				badConfig(ts.Config, tc)
				if tc.tls {
					ts.StartTLS()
				} else {
					ts.Start()
				}
				defer ts.Close()
				netObs = runBadCase(t, tc, badServer{ts.Listener.Addr().String(), ts.Client(), buf, handled})
				checkBadObs(t, tc.want, netObs)
			})
			t.Run("gatenet", func(t *testing.T) {
				begin(t)
				handled := make(chan string, 4)
				mode := modeHTTP
				if tc.tls {
					mode = modeHTTPS
				}
				e := start(t, badHandler(handled), mode, func(ts *httptest.Server) { badConfig(ts.Config, tc) })
				obs := runBadCase(t, tc, badServer{e.Addr(), e.Client(), e.Log, handled})
				checkBadObs(t, tc.want, obs)
				if netOK {
					require.Equal(t, netObs, obs, "gatenet differs from net")
				}
			})
		})
	}
}

func checkBadObs(t *testing.T, want, got badObs) {
	t.Helper()
	require.Equal(t, want.Response, got.Response)
	require.Equal(t, want.Closed, got.Closed)
	require.Equal(t, want.Handler, got.Handler)
	require.Len(t, got.Log, len(want.Log), "log: %q", got.Log)
	for i, re := range want.Log {
		require.Regexp(t, re, got.Log[i])
	}
}

// Out of descriptors: with connections waiting in the backlog and the
// process at RLIMIT_NOFILE, Accept fails with EMFILE; net/http must see a
// Temporary net.Error, log it and retry (not return from Serve), and serve
// the waiting connections once descriptors are free — as on net.
func TestAcceptEMFILE(t *testing.T) {
	for _, stack := range []string{"net", "gatenet"} {
		t.Run(stack, func(t *testing.T) {
			begin(t)
			listen := net.Listen
			if stack == "gatenet" {
				listen = gatenet.Listen
			}
			ln, err := listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			c := dialRaw(t, ln.Addr().String()) // waits in the backlog

			var old syscall.Rlimit
			require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
			low := old
			low.Cur = uint64(testutil.OpenFDs(t) + 16)
			require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
			var fillers []*os.File
			restore := func() {
				for _, f := range fillers {
					f.Close()
				}
				fillers = nil
				syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
			}
			defer restore()
			for len(fillers) < 1000 {
				f, err := os.Open(os.DevNull)
				if err != nil {
					require.ErrorIs(t, err, syscall.EMFILE)
					break
				}
				fillers = append(fillers, f)
			}

			buf := new(syncBuffer)
			srv := &http.Server{Handler: http.HandlerFunc(hello), ErrorLog: log.New(buf, "", 0)}
			serveErr := make(chan error, 1)
			go func() { serveErr <- srv.Serve(ln) }()
			defer srv.Close()
			waitFor(t, "an accept error to be logged", func() bool {
				select {
				case err := <-serveErr:
					t.Fatalf("Serve returned %v", err)
				default:
				}
				return buf.Len() > 0
			})
			restore()
			line := normalize(strings.SplitN(buf.String(), "\n", 2)[0])
			require.Equal(t, "http: Accept error: accept tcp ADDR: accept4: too many open files; retrying in 5ms", line)

			_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			require.NoError(t, err)
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			body, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			require.Equal(t, "hello HTTP/1.1 x", string(body))
		})
	}
}
