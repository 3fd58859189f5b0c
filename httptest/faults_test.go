//go:build linux

package httptest_test

// Servers under faults on purpose (Server.Faults): HTTP/1.1 and HTTP/2
// round trips through a slicer, and an accept loop through an EMFILE
// burst.

import (
	"bytes"
	"io"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/httptest"
	"github.com/gatenet/gatenet/internal/testutil"
)

// echoBody answers with the request's body, read whole first (an
// HTTP/1.x handler may not read the body once its response is flushed).
var echoBody = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Proto", r.Proto)
	w.Write(body)
})

// roundTrips posts n bodies of size bytes and checks each echo.
func roundTrips(t *testing.T, ts *httptest.Server, n, size int) string {
	t.Helper()
	var proto string
	for i := range n {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		res, err := ts.Client().Post(ts.URL, "application/octet-stream", bytes.NewReader(body))
		require.NoError(t, err)
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.True(t, bytes.Equal(body, got), "echo of %d bytes: got %d", len(body), len(got))
		proto = res.Header.Get("X-Proto")
	}
	return proto
}

func TestFaultsHTTPUnderSlicer(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		name  string
		start func(*httptest.Server)
		proto string
	}{
		{"HTTP/1.1", (*httptest.Server).Start, "HTTP/1.1"},
		{"HTTP/2", func(s *httptest.Server) { s.EnableHTTP2 = true; s.StartTLS() }, "HTTP/2.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := faults.New(11, faults.Slicer{Min: 1, Max: 7})
			ts := httptest.NewUnstartedServer(echoBody)
			ts.Faults = f
			tc.start(ts)
			defer ts.Close()
			require.Equal(t, tc.proto, roundTrips(t, ts, 10, 10<<10))
			require.Positive(t, f.Stats().Chunks)
			ts.Client().CloseIdleConnections()
		})
	}
}

// TestFaultsAcceptEMFILE: an http.Server keeps serving through EMFILE
// bursts from Accept (it backs off and retries, as on a real one), and
// nothing leaks.
func TestFaultsAcceptEMFILE(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(2, faults.AcceptErrors{Err: syscall.EMFILE, P: 0.5, Burst: 3})
	ts := httptest.NewUnstartedServer(echoBody)
	ts.Faults = f
	ts.Start()
	defer ts.Close()
	ts.Client().Transport.(*http.Transport).DisableKeepAlives = true // a connection, so an Accept, per request
	roundTrips(t, ts, 20, 100)
	require.Positive(t, f.Stats().Accepts)
}
