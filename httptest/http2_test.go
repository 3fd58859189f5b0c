//go:build linux

package httptest_test

// HTTP/2 over gatenet: over TLS (ALPN h2, EnableHTTP2) and cleartext (h2c
// with prior knowledge, net/http's own support; h2c_xnet_test.go has the
// golang.org/x/net/http2 variant), each carrying 100 concurrent streams
// on one connection.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
)

// h2Handler is the HTTP/2 suite's handler: it refuses anything but HTTP/2,
// reports the protocol it saw, and echoes the body's SHA-256. On /barrier
// it first waits until `barrier` requests are inside it at once.
type h2Handler struct {
	barrier int
	inside  atomic.Int64
	all     chan struct{}
	once    sync.Once
	conns   sync.Map // RemoteAddr → true: server-side connections seen
}

func newH2Handler(barrier int) *h2Handler {
	return &h2Handler{barrier: barrier, all: make(chan struct{})}
}

func (h *h2Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		http.Error(w, "not HTTP/2: "+r.Proto, http.StatusHTTPVersionNotSupported)
		return
	}
	h.conns.Store(r.RemoteAddr, true)
	if r.URL.Path == "/barrier" {
		if h.inside.Add(1) == int64(h.barrier) {
			h.once.Do(func() { close(h.all) })
		}
		select {
		case <-h.all:
		case <-r.Context().Done():
			return
		}
	}
	sum := sha256.New()
	n, err := io.Copy(sum, r.Body)
	if err != nil {
		return
	}
	tlsProto := "none"
	if r.TLS != nil {
		tlsProto = r.TLS.NegotiatedProtocol
	}
	w.Header().Set("X-Server-Proto", r.Proto)
	w.Header().Set("X-Server-ALPN", tlsProto)
	fmt.Fprintf(w, "%d %s", n, hex.EncodeToString(sum.Sum(nil)))
}

func (h *h2Handler) connCount() int {
	n := 0
	h.conns.Range(func(any, any) bool { n++; return true })
	return n
}

// h2Streams sends one request, then `streams` concurrent ones that all
// wait inside the handler for each other, each with its own random body,
// and checks they all went over one connection: dialed once (*dials), one
// connection seen by the server.
func h2Streams(t *testing.T, client *http.Client, url string, h *h2Handler, dials func() int64, wantALPN string) {
	t.Helper()
	post := func(path string, body []byte) error {
		res, err := client.Post(url+path, "application/octet-stream", bytes.NewReader(body))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		got, err := io.ReadAll(res.Body)
		switch want := strconv.Itoa(len(body)) + " " + sha(body); {
		case err != nil:
			return err
		case res.StatusCode != http.StatusOK || res.ProtoMajor != 2:
			return fmt.Errorf("%s %s: %s", res.Proto, res.Status, got)
		case res.Header.Get("X-Server-Proto") != "HTTP/2.0" || res.Header.Get("X-Server-ALPN") != wantALPN:
			return fmt.Errorf("server saw %s with ALPN %s", res.Header.Get("X-Server-Proto"), res.Header.Get("X-Server-ALPN"))
		case string(got) != want:
			return fmt.Errorf("server received %q, sent %q", got, want)
		}
		return nil
	}
	// The first request establishes the connection; the others then find
	// it in the pool instead of each dialing while it is being set up.
	require.NoError(t, post("/", randomBytes(t, 1000)))
	bodies := make([][]byte, h.barrier)
	for i := range bodies {
		bodies[i] = randomBytes(t, i*1000)
	}
	errc := make(chan error, h.barrier)
	for i := range h.barrier {
		go func() { errc <- post("/barrier", bodies[i]) }()
	}
	for range h.barrier {
		require.NoError(t, <-errc)
	}
	require.EqualValues(t, 1, dials(), "connections dialed")
	require.Equal(t, 1, h.connCount(), "connections seen by the server")
}

// HTTP/2 over TLS, negotiated by ALPN, through the Server's own Client.
func TestHTTP2TLS(t *testing.T) {
	begin(t)
	h := newH2Handler(100)
	e := start(t, h, modeH2, nil)
	h2Streams(t, e.Client(), e.URL, h, e.dials.Load, "h2")
	require.EqualValues(t, 1, e.accepted.Load())
}

// h2c: cleartext HTTP/2 with prior knowledge, net/http's own (Protocols
// with UnencryptedHTTP2 on the server and on the Transport).
func TestHTTP2Cleartext(t *testing.T) {
	begin(t)
	h := newH2Handler(100)
	e := start(t, h, modeHTTP, func(ts *httptest.Server) {
		ts.Config.Protocols = new(http.Protocols)
		ts.Config.Protocols.SetHTTP1(true)
		ts.Config.Protocols.SetUnencryptedHTTP2(true)
	})
	var dials atomic.Int64
	tr := &http.Transport{
		Protocols: new(http.Protocols),
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return (&gatenet.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	h2Streams(t, &http.Client{Transport: tr}, e.URL, h, dials.Load, "none")
	require.EqualValues(t, 1, e.accepted.Load())

	// The same server still speaks HTTP/1.1 to an HTTP/1.1 client.
	res, err := e.Client().Get(e.URL)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusHTTPVersionNotSupported, res.StatusCode)
}
