//go:build linux

package httptest_test

// TestMain and the helpers the suite shares: a started Server wrapped with
// connection accounting on both ends (every connection the server accepts
// and every one its Client dials must be a *gatenet.TCPConn), a captured
// ErrorLog, raw gatenet connections, and random payloads with their hashes.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
	"github.com/gatenet/gatenet/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.StartPollers()
	testutil.VerifyTestMain(m)
}

// begin starts a test: leak checks when it ends, and a hang detector.
func begin(t *testing.T) {
	t.Helper()
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
}

// Server modes for start.
const (
	modeHTTP  = "http"  // Start
	modeHTTPS = "https" // StartTLS, HTTP/1.1
	modeH2    = "h2"    // StartTLS with EnableHTTP2
)

// env is a started httptest.Server with accounting on both ends.
type env struct {
	*httptest.Server
	Log *syncBuffer // the server's ErrorLog

	dials     atomic.Int64 // connections the Client dialed
	accepted  atomic.Int64 // server StateNew
	finished  atomic.Int64 // server StateClosed or StateHijacked
	wrongType atomic.Value // string: a conn that was not gatenet's, either end
}

// start makes a Server for h in mode, lets configure adjust it before it
// starts (configure may be nil), and closes it when t ends, then checks
// that every connection on both ends was a *gatenet.TCPConn.
func start(t *testing.T, h http.Handler, mode string, configure func(*httptest.Server)) *env {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	e := &env{Server: ts, Log: new(syncBuffer)}
	ts.Config.ErrorLog = log.New(e.Log, "", 0)
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			e.accepted.Add(1)
			e.checkType("server", c)
		case http.StateClosed, http.StateHijacked:
			e.finished.Add(1)
		}
	}
	if configure != nil {
		configure(ts)
	}
	switch mode {
	case modeHTTP:
		ts.Start()
	case modeHTTPS, modeH2:
		ts.EnableHTTP2 = mode == modeH2
		ts.StartTLS()
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	tr := e.Transport()
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			e.dials.Add(1)
			e.checkType("client", c)
		}
		return c, err
	}
	t.Cleanup(func() {
		ts.Close()
		if w := e.wrongType.Load(); w != nil {
			t.Errorf("not a gatenet connection: %s", w)
		}
		if t.Failed() && e.Log.Len() > 0 {
			t.Logf("server ErrorLog:\n%s", e.Log)
		}
	})
	return e
}

func (e *env) checkType(side string, c net.Conn) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if _, ok := c.(*gatenet.TCPConn); !ok {
		e.wrongType.Store(fmt.Sprintf("%s conn is %T", side, c))
	}
}

// Transport is the Client's transport.
func (e *env) Transport() *http.Transport { return e.Client().Transport.(*http.Transport) }

// Addr is the server's host:port.
func (e *env) Addr() string { return e.Listener.Addr().String() }

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// dialRaw connects to addr with gatenet and closes the conn when t ends.
func dialRaw(t testing.TB, addr string) *gatenet.TCPConn {
	t.Helper()
	c, err := gatenet.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	tc, ok := c.(*gatenet.TCPConn)
	require.True(t, ok, "gatenet.Dial returned %T", c)
	return tc
}

// randomBytes returns n random bytes.
func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// certFile writes the server's certificate as PEM for curl's --cacert.
func certFile(t testing.TB, ts *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cert.pem")
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// waitFor polls cond every few milliseconds; it fails the test if cond is
// still false after a minute (a hang detector, not a timing assertion).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
