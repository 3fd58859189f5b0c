//go:build linux

package httptest_test

// The package's own API, against net/http/httptest's semantics: URL forms,
// the listener and the client are gatenet's, double Start panics, the TLS
// config is cloned, Close waits for outstanding requests,
// CloseClientConnections, the example.com redirect, and the same
// observations as net/http/httptest for the same calls.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	stdhttptest "net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
)

func hello(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, "hello "+r.Proto+" "+r.Host)
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(body)
}

func TestServerPlain(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(hello), modeHTTP, nil)
	require.True(t, strings.HasPrefix(e.URL, "http://127.0.0.1:"), e.URL)
	require.Equal(t, "http://"+e.Addr(), e.URL)
	require.IsType(t, (*gatenet.TCPListener)(nil), e.Listener)
	require.Nil(t, e.Certificate())
	res, body := get(t, e.Client(), e.URL)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "hello HTTP/1.1 "+e.Addr(), body)
	require.Nil(t, res.TLS)
	require.EqualValues(t, 1, e.dials.Load())
	require.EqualValues(t, 1, e.accepted.Load())
}

func TestServerTLS(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(hello), modeHTTPS, nil)
	require.True(t, strings.HasPrefix(e.URL, "https://127.0.0.1:"), e.URL)
	cert := e.Certificate()
	require.NotNil(t, cert)
	require.True(t, cert.IsCA)
	require.Equal(t, cert.Raw, e.TLS.Certificates[0].Certificate[0])
	for _, host := range []string{"127.0.0.1", "::1", "localhost", "example.com", "www.example.com"} {
		require.NoError(t, cert.VerifyHostname(host), host)
	}
	res, body := get(t, e.Client(), e.URL)
	require.Equal(t, "hello HTTP/1.1 "+e.Addr(), body)
	require.NotNil(t, res.TLS)
	require.Empty(t, res.TLS.NegotiatedProtocol, "the HTTP/1.1 client offers no ALPN")
	require.Equal(t, []string{"http/1.1"}, e.TLS.NextProtos)

	// A client that does not trust the certificate is refused.
	tr := &http.Transport{DialContext: (&gatenet.Dialer{}).DialContext}
	defer tr.CloseIdleConnections()
	_, err := (&http.Client{Transport: tr}).Get(e.URL)
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
}

func TestServerEnableHTTP2(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(hello), modeH2, nil)
	res, body := get(t, e.Client(), e.URL)
	require.Equal(t, 2, res.ProtoMajor)
	require.Equal(t, "h2", res.TLS.NegotiatedProtocol)
	require.Equal(t, "hello HTTP/2.0 "+e.Addr(), body)
	require.Equal(t, []string{"h2"}, e.TLS.NextProtos)
}

func TestServerStartTwicePanics(t *testing.T) {
	begin(t)
	for _, tc := range []struct {
		name          string
		first, second func(*httptest.Server)
	}{
		{"Start/Start", (*httptest.Server).Start, (*httptest.Server).Start},
		{"Start/StartTLS", (*httptest.Server).Start, (*httptest.Server).StartTLS},
		{"StartTLS/StartTLS", (*httptest.Server).StartTLS, (*httptest.Server).StartTLS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewUnstartedServer(http.HandlerFunc(hello))
			defer ts.Close()
			tc.first(ts)
			require.PanicsWithValue(t, "Server already started", func() { tc.second(ts) })
		})
	}
}

func TestServerTLSConfigCloned(t *testing.T) {
	begin(t)
	var mine *tls.Config
	e := start(t, http.HandlerFunc(hello), modeHTTPS, func(ts *httptest.Server) {
		mine = &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{"http/1.1"}}
		ts.TLS = mine
	})
	require.NotSame(t, mine, e.TLS)
	require.Empty(t, mine.Certificates, "the caller's config was modified")
	require.EqualValues(t, tls.VersionTLS13, e.TLS.MinVersion)
	res, _ := get(t, e.Client(), e.URL)
	require.EqualValues(t, tls.VersionTLS13, res.TLS.Version)
}

// Close blocks until the outstanding request is done, as httptest's does,
// and closes the idle connections of the Client.
func TestServerCloseWaits(t *testing.T) {
	begin(t)
	entered, release := make(chan struct{}), make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done")
	}))
	defer ts.Close()
	c := ts.Client()
	_, body := get(t, c, ts.URL) // leaves an idle connection
	require.Equal(t, "done", body)

	got := make(chan string, 1)
	go func() {
		res, err := c.Get(ts.URL + "/block")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		got <- string(b)
	}()
	<-entered
	closed := make(chan struct{})
	go func() { ts.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned with a request outstanding")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.Equal(t, "done", <-got)
	<-closed
	_, err := c.Get(ts.URL)
	require.Error(t, err, "a request after Close succeeded")
}

// CloseClientConnections closes idle and active connections alike.
func TestServerCloseClientConnections(t *testing.T) {
	begin(t)
	entered := make(chan struct{})
	e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			close(entered)
			<-r.Context().Done()
			return
		}
		io.WriteString(w, "ok")
	}), modeHTTP, nil)
	get(t, e.Client(), e.URL)
	require.EqualValues(t, 1, e.dials.Load())

	// An idle raw connection, and a request in a handler that never ends
	// by itself.
	raw := dialRaw(t, e.Addr())
	waitFor(t, "the raw connection to be accepted", func() bool { return e.accepted.Load() == 2 })
	errc := make(chan error, 1)
	go func() {
		// A POST: the Transport would retry a GET on a new connection.
		res, err := e.Client().Post(e.URL+"/hang", "text/plain", nil)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	<-entered
	e.CloseClientConnections()
	require.Error(t, <-errc, "the hanging request succeeded")
	raw.SetReadDeadline(time.Now().Add(time.Minute))
	n, err := raw.Read(make([]byte, 1))
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)

	// The server goes on serving, on a new connection.
	_, body := get(t, e.Client(), e.URL)
	require.Equal(t, "ok", body)
	require.EqualValues(t, 2, e.dials.Load())
}

// The Client sends requests for example.com and its subdomains to the
// server, on ports 80 (http) and 443 (https).
func TestServerExampleComRedirect(t *testing.T) {
	begin(t)
	for _, mode := range []string{modeHTTP, modeHTTPS} {
		t.Run(mode, func(t *testing.T) {
			e := start(t, http.HandlerFunc(hello), mode, nil)
			for _, host := range []string{"example.com", "www.example.com"} {
				_, body := get(t, e.Client(), mode+"://"+host+"/")
				require.Equal(t, "hello HTTP/1.1 "+host, body)
			}
		})
	}
}

func TestServerRecorderReexports(t *testing.T) {
	begin(t)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/x", nil)
	require.Equal(t, stdhttptest.NewRequest(http.MethodGet, "/x", nil).RemoteAddr, req.RemoteAddr)
	require.Equal(t, stdhttptest.DefaultRemoteAddr, httptest.DefaultRemoteAddr)
	hello(rec, req)
	require.Equal(t, "hello HTTP/1.1 example.com", rec.Body.String())
	require.IsType(t, (*stdhttptest.ResponseRecorder)(nil), rec)
}

// The same calls on net/http/httptest and on this package give the same
// observations, apart from the connection types underneath.
func TestServerParityWithStdlib(t *testing.T) {
	begin(t)
	type server struct {
		url    string
		client *http.Client
		cert   *x509.Certificate
		close  func()
	}
	type observation struct {
		Scheme, Proto, ALPN, Body string
		HasCert, CertIsCA         bool
		KeyAlgorithm, Suite       string
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) })
	observe := func(t *testing.T, s server) observation {
		defer s.close()
		res, body := get(t, s.client, s.url)
		o := observation{Scheme: strings.SplitN(s.url, ":", 2)[0], Proto: res.Proto, Body: body, HasCert: s.cert != nil}
		if res.TLS != nil {
			o.ALPN, o.Suite = res.TLS.NegotiatedProtocol, tls.CipherSuiteName(res.TLS.CipherSuite)
		}
		if s.cert != nil {
			o.CertIsCA, o.KeyAlgorithm = s.cert.IsCA, s.cert.PublicKeyAlgorithm.String()
		}
		return o
	}
	// A server that takes only RSA suites (TLS 1.2): the certificate must
	// be an RSA one, as httptest's is (an ECDSA one failed every handshake).
	const modeRSASuites = "https-rsa-suites"
	for _, mode := range []string{modeHTTP, modeHTTPS, modeH2, modeRSASuites} {
		t.Run(mode, func(t *testing.T) {
			std := stdhttptest.NewUnstartedServer(h)
			ours := httptest.NewUnstartedServer(h)
			if mode == modeRSASuites {
				rsaOnly := func() *tls.Config {
					return &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}
				}
				std.TLS, ours.TLS = rsaOnly(), rsaOnly()
			}
			if mode == modeHTTP {
				std.Start()
				ours.Start()
			} else {
				std.EnableHTTP2, ours.EnableHTTP2 = mode == modeH2, mode == modeH2
				std.StartTLS()
				ours.StartTLS()
			}
			want := observe(t, server{std.URL, std.Client(), std.Certificate(), std.Close})
			got := observe(t, server{ours.URL, ours.Client(), ours.Certificate(), ours.Close})
			require.Equal(t, want, got)
		})
	}
}

// A request to a closed server fails with a connection error, as with
// net/http/httptest.
func TestServerClosedRefuses(t *testing.T) {
	begin(t)
	ts := httptest.NewServer(http.HandlerFunc(hello))
	c, url := ts.Client(), ts.URL
	ts.Close()
	ts.Close() // idempotent
	_, err := c.Get(url)
	var op *net.OpError
	require.True(t, errors.As(err, &op), "got %v", err)
	require.Equal(t, "dial", op.Op)
}
