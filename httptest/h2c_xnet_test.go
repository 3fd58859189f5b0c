//go:build linux

package httptest_test

// h2c with golang.org/x/net/http2: an h2c.NewHandler server and an
// http2.Transport{AllowHTTP: true} whose DialTLSContext dials plain
// gatenet TCP. Behind a build tag because x/net/http2 needs
// golang.org/x/text (through x/net/idna), which go.mod does not list yet;
// golang.org/x/net/http2/h2c is also deprecated in favour of net/http's
// own h2c, which TestHTTP2Cleartext covers. To run it:
//
//	go get golang.org/x/text@v0.43.0   # adds it to go.mod and go.sum
//	go test -race -tags gatenet_xnet_h2c -run XNet ./httptest

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
