//go:build linux

package httptest_test

// NewTestServer, Go 1.27's net/http/httptest constructor, over gatenet
// loopback sockets: every request its Client makes reaches it, the test's
// end closes it, a handler panic fails the test, and Start after Close
// panics as the standard library of the Go it is built with does.

import (
	"fmt"
	"io"
	"net/http"
	stdhttptest "net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
)

// fetch is c's GET of url: the status and body.
func fetch(t *testing.T, c *http.Client, url string) (int, string, *http.Response) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err, url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp
}

func TestNewTestServerSendsEveryRequestToIt(t *testing.T) {
	begin(t)
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprint("h2=", h2), func(t *testing.T) {
			s := httptest.NewTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "%s %s %s", r.Host, r.URL.Path, r.Proto)
			}))
			s.EnableHTTP2 = h2
			c := s.Client()
			require.Equal(t, "http://example.com", s.URL)
			require.Nil(t, s.Listener, "no Listener, as net/http/httptest's in-memory server")
			for _, url := range []string{"http://www.example.com/a", "https://go.dev/b", "http://10.0.0.1/c", s.URL + "/d"} {
				code, body, resp := fetch(t, c, url)
				require.Equal(t, http.StatusOK, code, url)
				proto := "HTTP/1.1"
				if h2 && strings.HasPrefix(url, "https") {
					proto = "HTTP/2.0"
				}
				require.Equal(t, proto, resp.Proto, url)
				require.True(t, strings.HasSuffix(body, " "+proto), "%s: %q", url, body)
			}
		})
	}
}

func TestNewTestServerNilHandlerAndStart(t *testing.T) {
	begin(t)
	s := httptest.NewTestServer(t, nil)
	s.Start() // on the loopback interface instead
	require.NotNil(t, s.Listener)
	require.True(t, strings.HasPrefix(s.URL, "http://127.0.0.1:"), s.URL)
	_, ok := s.Listener.(*gatenet.TCPListener)
	require.True(t, ok, "%T", s.Listener)
	code, _, _ := fetch(t, s.Client(), s.URL+"/")
	require.Equal(t, http.StatusInternalServerError, code, "a nil handler serves 500s, not DefaultServeMux")
	require.PanicsWithValue(t, "Server already started", s.Start)
}

// panicTB is a testing.TB whose Errorf is recorded, not failed.
type panicTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (p *panicTB) Errorf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.errs = append(p.errs, fmt.Sprintf(format, args...))
}

func TestNewTestServerHandlerPanicFailsTest(t *testing.T) {
	begin(t)
	tb := &panicTB{TB: t}
	s := httptest.NewTestServer(tb, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/abort" {
			panic(http.ErrAbortHandler)
		}
		panic("boom")
	}))
	_, err := s.Client().Get("http://example.com/")
	require.Error(t, err, "the connection is aborted")
	_, err = s.Client().Get("http://example.com/abort")
	require.Error(t, err)
	s.Close()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	require.Len(t, tb.errs, 1, "ErrAbortHandler is no failure: %q", tb.errs)
	require.Contains(t, tb.errs[0], "httptest: panic in server handler: boom")
}

// TestNewTestServerClosed: a NewTestServer server closed before it
// started refuses every start, its Client's included, as Go 1.27's does,
// with Go 1.26 too: nothing is listened on or served that no Close would
// end (its cleanup's Close waited for good on a server started after).
func TestNewTestServerClosed(t *testing.T) {
	begin(t)
	for _, start := range []string{"Start", "StartTLS", "Client"} {
		s := httptest.NewTestServer(t, nil)
		s.Close()
		require.PanicsWithValue(t, "Start of closed Server", func() {
			switch start {
			case "Start":
				s.Start()
			case "StartTLS":
				s.StartTLS()
			default:
				s.Client()
			}
		}, start)
		require.Nil(t, s.Listener, start)
	}
}

// TestStartOfClosedServer: Start or StartTLS after Close does what the
// standard library's does with the Go this is built with (Go 1.27:
// panics "Start of closed Server"; Go 1.26: serves on the closed
// listener, no panic).
func TestStartOfClosedServer(t *testing.T) {
	begin(t)
	caught := func(f func()) (p any) {
		defer func() { p = recover() }()
		f()
		return nil
	}
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, tls := range []bool{false, true} {
		std := stdhttptest.NewUnstartedServer(h)
		std.Close()
		ours := httptest.NewUnstartedServer(h)
		ours.Close()
		start := func(s interface {
			Start()
			StartTLS()
		}) func() {
			if tls {
				return s.StartTLS
			}
			return s.Start
		}
		require.Equal(t, caught(start(std)), caught(start(ours)), "tls=%v", tls)
		std.Close()
		ours.Close()
	}
}

// TestNewTestServerInBubble: a NewTestServer and its Client in a
// testing/synctest bubble, over gatenet's sockets: the clock moves while
// the started server waits for its first request, and a handler that
// sleeps 30 s answers at 30 s of fake time.
func TestNewTestServerInBubble(t *testing.T) {
	begin(t)
	synctest.Test(t, func(t *testing.T) {
		s := httptest.NewTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(30 * time.Second)
			io.WriteString(w, "late")
		}))
		c := s.Client()
		time.Sleep(time.Minute) // nothing served yet: nothing keeps the bubble busy
		start := time.Now()
		code, body, _ := fetch(t, c, "http://example.com/")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "late", body)
		require.Equal(t, 30*time.Second, time.Since(start))
	})
}
