package tlstest_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/tlstest"
)

// A connected pair for a test: both ends handshaken, closed when the test
// ends. (In a real test, t is the test's *testing.T.)
func ExamplePair() {
	t := newExampleT()
	defer t.done()

	c, s := tlstest.Pair(t, nil, nil)
	go func() {
		io.Copy(s, s) // echo until the client closes
	}()
	fmt.Fprintln(c, "hello")
	line, _ := bufio.NewReader(c).ReadString('\n')
	st := c.ConnectionState()
	fmt.Print(line)
	fmt.Println(tls.VersionName(st.Version), st.PeerCertificates[0].DNSNames)
	// Output:
	// hello
	// TLS 1.3 [localhost]
}

// A CA of one's own, issuing an RSA server certificate for a name and a
// client certificate for mutual TLS.
func ExampleNewCA() {
	ca, err := tlstest.NewCA()
	if err != nil {
		panic(err)
	}
	leaf, err := ca.Leaf(tlstest.RSA, "db.internal", "10.0.0.7")
	if err != nil {
		panic(err)
	}
	client, err := ca.ClientCert(tlstest.ECDSA, "backup-job")
	if err != nil {
		panic(err)
	}
	fmt.Println(leaf.Leaf.Subject.CommonName, leaf.Leaf.DNSNames, leaf.Leaf.IPAddresses, leaf.Leaf.PublicKeyAlgorithm)
	fmt.Println(client.Leaf.Subject.CommonName, client.Leaf.PublicKeyAlgorithm)

	// Verify the leaf as a TLS client would.
	_, err = leaf.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "db.internal"})
	fmt.Println("verified:", err == nil)

	// The configurations that use them.
	_ = &tls.Config{Certificates: []tls.Certificate{leaf}, ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	_ = &tls.Config{Certificates: []tls.Certificate{client}, RootCAs: ca.Pool(), ServerName: "db.internal"}
	// Output:
	// db.internal [db.internal] [10.0.0.7] RSA
	// backup-job ECDSA
	// verified: true
}

// A TLS server whose handler runs once per connection, after the
// handshake; the client takes its configuration from the server.
func ExampleNewServer() {
	t := newExampleT()
	defer t.done()

	srv := tlstest.NewServer(t, &tls.Config{
		Certificates: []tls.Certificate{mustLeaf()},
		NextProtos:   []string{"greet/1"},
	}, func(c *tls.Conn) {
		fmt.Fprintf(c, "hello over %s\n", c.ConnectionState().NegotiatedProtocol)
	})

	cfg := srv.ClientConfig()
	cfg.NextProtos = []string{"greet/1"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := srv.DialContext(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	greeting, _ := io.ReadAll(c) // the server closes after its handler
	fmt.Print(string(greeting))
	srv.Close()
	ok, failed := srv.Handshakes()
	fmt.Println(ok, "handshake,", failed, "failed")
	// Output:
	// hello over greet/1
	// 1 handshake, 0 failed
}

func mustLeaf() tls.Certificate {
	leaf, err := tlstest.DefaultCA().Leaf(tlstest.ECDSA, "127.0.0.1")
	if err != nil {
		panic(err)
	}
	return leaf
}

// exampleT stands in for the *testing.T a real test would pass: examples
// have none. It provides the methods tlstest calls and runs the cleanups
// when the example is done.
type exampleT struct {
	testing.TB // nil: any other method panics
	ctx        context.Context
	cancel     context.CancelFunc
	cleanups   []func()
}

func newExampleT() *exampleT {
	ctx, cancel := context.WithCancel(context.Background())
	return &exampleT{ctx: ctx, cancel: cancel}
}

func (t *exampleT) Helper()                           {}
func (t *exampleT) Name() string                      { return "Example" }
func (t *exampleT) Context() context.Context          { return t.ctx }
func (t *exampleT) Cleanup(f func())                  { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *exampleT) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (t *exampleT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (t *exampleT) done() {
	t.cancel()
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
}

// The certificate functions need no test: here a TLS server and client
// outside one, on gatenet's sockets, with the default configurations (a
// certificate for localhost from DefaultCA, and a client trusting it).
func ExampleDefaultServerConfig() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	tln := tls.NewListener(ln, tlstest.DefaultServerConfig())
	defer tln.Close()
	go func() {
		c, err := tln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.Copy(c, c) // echo until the client closes
	}()

	raw, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	cfg := tlstest.DefaultClientConfig()
	cfg.ServerName = "localhost"
	c := tls.Client(raw, cfg)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(c, "hello")
	line, err := bufio.NewReader(c).ReadString('\n')
	fmt.Print(line)
	fmt.Println(err, c.ConnectionState().PeerCertificates[0].Issuer.CommonName == tlstest.DefaultCA().Certificate().Subject.CommonName)
	// Output:
	// hello
	// <nil> true
}
