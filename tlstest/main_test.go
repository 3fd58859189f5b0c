//go:build linux

package tlstest_test

// TestMain, the fixtures the suite shares (one CA and its certificates per
// test binary, since RSA keys are slow to make), and the two socket stacks
// the side-by-side scenarios run on: package net's and gatenet's.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/tlstest"
)

func TestMain(m *testing.M) {
	testutil.StartPollers()
	testutil.VerifyTestMain(m)
}

// certs are the suite's certificates, all from one CA.
type certs struct {
	ca *tlstest.CA
	// leaf is a server certificate for localhost, 127.0.0.1 and ::1 per
	// key kind.
	leaf map[tlstest.KeyKind]tls.Certificate
	// sniA and sniB are server certificates for a.example and b.example.
	sniA, sniB tls.Certificate
	// client is a client certificate for "client-1".
	client tls.Certificate
}

var fixtures = sync.OnceValues(func() (*certs, error) {
	ca, err := tlstest.NewCA()
	if err != nil {
		return nil, err
	}
	c := &certs{ca: ca, leaf: make(map[tlstest.KeyKind]tls.Certificate)}
	for _, k := range []tlstest.KeyKind{tlstest.ECDSA, tlstest.RSA} {
		if c.leaf[k], err = ca.Leaf(k, "localhost", "127.0.0.1", "::1"); err != nil {
			return nil, err
		}
	}
	if c.sniA, err = ca.Leaf(tlstest.ECDSA, "a.example"); err != nil {
		return nil, err
	}
	if c.sniB, err = ca.Leaf(tlstest.ECDSA, "b.example"); err != nil {
		return nil, err
	}
	if c.client, err = ca.ClientCert(tlstest.ECDSA, "client-1"); err != nil {
		return nil, err
	}
	return c, nil
})

func testCerts(t testing.TB) *certs {
	t.Helper()
	c, err := fixtures()
	if err != nil {
		t.Fatalf("making the test certificates: %v", err)
	}
	return c
}

// serverConfig serves the fixtures' certificate of kind.
func (c *certs) serverConfig(kind tlstest.KeyKind) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{c.leaf[kind]}}
}

// clientConfig trusts the fixtures' CA, for the name 127.0.0.1.
func (c *certs) clientConfig() *tls.Config {
	return &tls.Config{RootCAs: c.ca.Pool(), ServerName: "127.0.0.1"}
}

// versionName is "TLS1.2" or "TLS1.3".
func versionName(v uint16) string {
	return tls.VersionName(v)
}

// stack is one library's sockets.
type stack struct {
	name   string
	listen func(ctx context.Context, network, address string) (net.Listener, error)
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
}

var (
	netStack = stack{
		name: "net",
		listen: func(ctx context.Context, network, address string) (net.Listener, error) {
			var lc net.ListenConfig
			lc.SetMultipathTCP(false) // as gatenet's below: both plain TCP
			return lc.Listen(ctx, network, address)
		},
		dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, address)
		},
	}
	gatenetStack = stack{
		name: "gatenet",
		listen: func(ctx context.Context, network, address string) (net.Listener, error) {
			var lc gatenet.ListenConfig
			lc.SetMultipathTCP(false)
			return lc.Listen(ctx, network, address)
		},
		dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			var d gatenet.Dialer
			return d.DialContext(ctx, network, address)
		},
	}
	stacks = []stack{netStack, gatenetStack}
)

// stackParity runs scenario on each stack, in a subtest of the stack's
// name with leak checks, and fails t unless what gatenet observed equals
// (reflect.DeepEqual, as require.Equal compares) what net did, when both
// ran to the end.
func stackParity[T any](t *testing.T, scenario func(t *testing.T, st stack) T) {
	t.Helper()
	obs := make(map[string]T)
	for _, st := range stacks {
		t.Run(st.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			obs[st.name] = scenario(t, st)
		})
	}
	if len(obs) == 2 && !reflect.DeepEqual(obs["net"], obs["gatenet"]) {
		t.Errorf("gatenet differs from net:\nnet:     %+v\ngatenet: %+v", obs["net"], obs["gatenet"])
	}
}

// rawPair is a connected client and accepted server conn on s over
// network ("tcp" on 127.0.0.1, or "unix" in t.TempDir()), closed when t
// ends.
func rawPair(t testing.TB, s stack, network string) (c, srv net.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	address := "127.0.0.1:0"
	if network == "unix" {
		address = t.TempDir() + "/s"
	}
	ln, err := s.listen(ctx, network, address)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, srv, err = testutil.Connect(ln, func() (net.Conn, error) { return s.dial(ctx, network, ln.Addr().String()) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
	})
	return c, srv
}

// tlsPairOn is tlstest.Pair on s: the handshakes run concurrently under a
// one-minute bound. With gatenetStack it is tlstest.Pair (or PairUnix)
// itself, so the scenarios compare the package under test with the same
// steps done over net.
func tlsPairOn(t testing.TB, s stack, network string, server, client *tls.Config) (c, srv *tls.Conn) {
	t.Helper()
	if s.name == "gatenet" {
		if network == "unix" {
			return tlstest.PairUnix(t, server, client)
		}
		return tlstest.Pair(t, server, client)
	}
	if server == nil {
		server = tlstest.DefaultServerConfig()
	}
	if client == nil {
		client = tlstest.DefaultClientConfig()
	}
	if client.ServerName == "" {
		client = client.Clone()
		client.ServerName = map[string]string{"tcp": "127.0.0.1", "unix": "localhost"}[network]
	}
	rc, rs := rawPair(t, s, network)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, srv, err := handshake(ctx, rc, rs, server, client)
	if err != nil {
		t.Fatalf("over %s: %v", s.name, err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
	})
	return c, srv
}

// handshake runs the client's handshake on rc and the server's on rs
// concurrently under ctx. A side that fails closes its conn, so that the
// other fails at once rather than at ctx's end; the error names both
// sides' outcomes, and both conns are then closed.
func handshake(ctx context.Context, rc, rs net.Conn, server, client *tls.Config) (c, s *tls.Conn, err error) {
	c, s = tls.Client(rc, client), tls.Server(rs, server)
	errc := make(chan error, 1)
	go func() {
		err := s.HandshakeContext(ctx)
		if err != nil {
			rs.Close()
		}
		errc <- err
	}()
	cerr := c.HandshakeContext(ctx)
	if cerr != nil {
		rc.Close()
	}
	if serr := <-errc; cerr != nil || serr != nil {
		rc.Close()
		rs.Close()
		return nil, nil, fmt.Errorf("handshake: client: %v, server: %v", cerr, serr)
	}
	return c, s, nil
}

var (
	addrRE = regexp.MustCompile(`(\d+\.\d+\.\d+\.\d+|\[[0-9a-f:]*\]):\d+`)
	pathRE = regexp.MustCompile(`(->| )/[^ :]+`)
)

// describeErr is err in a form comparable across stacks and runs: nil, or
// the classes errors.Is finds plus the text with addresses blanked out.
func describeErr(err error) string {
	if err == nil {
		return "nil"
	}
	var classes string
	for _, c := range []struct {
		name   string
		target error
	}{
		{"EOF", io.EOF},
		{"UnexpectedEOF", io.ErrUnexpectedEOF},
		{"ErrClosed", net.ErrClosed},
		{"DeadlineExceeded", os.ErrDeadlineExceeded},
		{"ctx.DeadlineExceeded", context.DeadlineExceeded},
	} {
		if errors.Is(err, c.target) {
			classes += c.name + " "
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		classes += "Timeout "
	}
	if err == io.EOF {
		classes += "bare "
	}
	return fmt.Sprintf("[%s] %s", classes, pathRE.ReplaceAllString(addrRE.ReplaceAllString(err.Error(), "ADDR"), "${1}PATH"))
}

// isTimeout reports whether err is a deadline or context timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// waitFDs waits up to 5 s for the open-descriptor count to fall back to
// want, and fails t if it does not.
func waitFDs(t testing.TB, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	got := testutil.OpenFDs(t)
	for got > want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		got = testutil.OpenFDs(t)
	}
	if got > want {
		t.Errorf("%d descriptors open, want %d (the baseline)", got, want)
	}
}

// recv receives from ch, failing t after a generous bound (a hang
// detector, not a timing assertion).
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s after a minute", what)
		panic("unreachable")
	}
}
