//go:build linux

package gatenet_test

import (
	"crypto/sha256"
	"io"
	"math/rand"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestServeContentSendfile: net/http's ServeContent over a gatenet
// listener reaches TCPConn.ReadFrom and takes the sendfile path.
func TestServeContentSendfile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	path := t.TempDir() + "/f"
	payload := make([]byte, 8<<20)
	rand.New(rand.NewSource(5)).Read(payload)
	require.NoError(t, os.WriteFile(path, payload, 0o600))

	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer f.Close()
		http.ServeContent(w, r, "f", time.Time{}, f)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	tr := &http.Transport{DialContext: (&gatenet.Dialer{}).DialContext}
	defer tr.CloseIdleConnections()
	before := gatenet.SendfileCalls()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + ln.Addr().String() + "/")
	require.NoError(t, err)
	h := sha256.New()
	_, err = io.Copy(h, resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, sha256.Sum256(payload), [32]byte(h.Sum(nil)))
	require.Greater(t, gatenet.SendfileCalls(), before, "ServeContent did not take the sendfile path")
}
