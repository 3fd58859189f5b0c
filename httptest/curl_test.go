//go:build linux

package httptest_test

// curl, a real peer in another process, against gatenet servers: HTTP/1.1
// keep-alive and an upload (curl sends Expect: 100-continue above 1 MiB),
// HTTP/2 over TLS trusting the server's certificate with --cacert (and
// refusing it without), and h2c with prior knowledge.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/httptest"
)

// curlHandler answers /hello with the protocol and /sum with the
// request body's SHA-256.
func curlHandler(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/hello":
		io.WriteString(w, "hello "+r.Proto)
	case "/sum":
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		io.WriteString(w, sha(b)+" expect="+r.Header.Get("Expect"))
	default:
		http.NotFound(w, r)
	}
}

// curl runs curl with args (and -sS, a per-transfer status line) and
// returns its output, failing the test unless it exits with wantExit.
func curl(t *testing.T, wantExit int, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("curl")
	if err != nil {
		t.Skipf("curl is not installed (.ci/run installs it): %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	args = append([]string{"-sS", "--max-time", "50", "-w", `\n[%{http_code} %{http_version} %{num_connects}]\n`}, args...)
	cmd := exec.CommandContext(ctx, path, args...)
	out, err := cmd.CombinedOutput()
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else {
		require.NoError(t, err, "running curl")
	}
	require.Equal(t, wantExit, exit, "curl %s:\n%s", strings.Join(args, " "), out)
	return string(out)
}

func uploadFile(t *testing.T) (path, sum string) {
	data := randomBytes(t, 2<<20)
	path = filepath.Join(t.TempDir(), "upload.bin")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path, sha(data)
}

func TestCurlHTTP1(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(curlHandler), modeHTTP, nil)
	// Two transfers in one invocation: the second reuses the connection.
	out := curl(t, 0, "--http1.1", e.URL+"/hello", e.URL+"/hello")
	require.Equal(t, "hello HTTP/1.1\n[200 1.1 1]\nhello HTTP/1.1\n[200 1.1 0]\n", out)
	require.EqualValues(t, 1, e.accepted.Load())

	path, sum := uploadFile(t)
	out = curl(t, 0, "--http1.1", "--data-binary", "@"+path, e.URL+"/sum")
	require.Equal(t, sum+" expect=100-continue\n[200 1.1 1]\n", out)
	require.Empty(t, e.Log.String())
}

func TestCurlHTTP2TLS(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(curlHandler), modeH2, nil)
	ca := certFile(t, e.Server)
	out := curl(t, 0, "--http2", "--cacert", ca, e.URL+"/hello", e.URL+"/hello")
	require.Equal(t, "hello HTTP/2.0\n[200 2 1]\nhello HTTP/2.0\n[200 2 0]\n", out)
	require.EqualValues(t, 1, e.accepted.Load())

	path, sum := uploadFile(t)
	out = curl(t, 0, "--http2", "--cacert", ca, "--data-binary", "@"+path, e.URL+"/sum")
	require.True(t, strings.HasPrefix(out, sum+" expect="), out)
	require.True(t, strings.HasSuffix(out, "\n[200 2 1]\n"), out)

	// Without the certificate curl refuses the server (exit 60: peer
	// certificate cannot be authenticated with known CA certificates).
	out = curl(t, 60, "--http2", e.URL+"/hello")
	require.Contains(t, out, "certificate")
	waitFor(t, "the refused handshake to be logged", func() bool { return e.Log.Len() > 0 })
	require.Contains(t, e.Log.String(), "http: TLS handshake error from 127.0.0.1:")
}

func TestCurlH2C(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(curlHandler), modeHTTP, func(ts *httptest.Server) {
		ts.Config.Protocols = new(http.Protocols)
		ts.Config.Protocols.SetHTTP1(true)
		ts.Config.Protocols.SetUnencryptedHTTP2(true)
	})
	// One transfer per invocation: curl 7.88.1 fails a second transfer
	// reusing an h2c prior-knowledge connection ("(16) Error in the HTTP2
	// framing layer") against net/http/httptest's server just the same.
	for range 2 {
		out := curl(t, 0, "--http2-prior-knowledge", e.URL+"/hello")
		require.Equal(t, "hello HTTP/2.0\n[200 2 1]\n", out)
	}
	require.EqualValues(t, 2, e.accepted.Load())
}
