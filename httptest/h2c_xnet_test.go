//go:build linux

package httptest_test

// h2c with golang.org/x/net/http2: an h2c.NewHandler server and an
// http2.Transport{AllowHTTP: true} whose DialTLSContext dials plain
// gatenet TCP. golang.org/x/net/http2/h2c is deprecated in favour of
// net/http's own h2c, which TestHTTP2Cleartext covers; this test stays for
// the code that still uses x/net's. To run it alone:
//
//	go test -race -run XNet ./httptest

//lint:file-ignore SA1019 the deprecated x/net h2c and http2 API is what this file tests, for the code that still uses it

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"

	"github.com/gatenet/gatenet"
)

func TestHTTP2CleartextXNet(t *testing.T) {
	begin(t)
	h := newH2Handler(100)
	e := start(t, h2c.NewHandler(h, &http2.Server{}), modeHTTP, nil)
	var dials atomic.Int64
	tr := &http2.Transport{
		AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			dials.Add(1)
			return (&gatenet.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	defer tr.CloseIdleConnections()
	h2Streams(t, &http.Client{Transport: tr}, e.URL, h, dials.Load, "none")
	require.EqualValues(t, 1, e.accepted.Load())
}
