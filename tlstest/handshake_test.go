//go:build linux

package tlstest_test

// Handshakes: TLS 1.2 and 1.3 with ECDSA and RSA certificates over TCP and
// Unix sockets, session resumption, mutual TLS, ALPN and SNI.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/tlstest"
)

var versions = []uint16{tls.VersionTLS12, tls.VersionTLS13}

// handshakeFixture starts a handshake test: leak checks, a watchdog and
// the certificates.
func handshakeFixture(t *testing.T) *certs {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	return testCerts(t)
}

// eachVersion runs fn in a subtest per TLS version, with leak checks.
func eachVersion(t *testing.T, fn func(t *testing.T, v uint16)) {
	for _, v := range versions {
		t.Run(versionName(v), func(t *testing.T) {
			testutil.CheckLeaks(t)
			fn(t, v)
		})
	}
}

// exchange sends a message each way over the pair and checks it arrives.
func exchange(t testing.TB, c, s *tls.Conn) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		if _, err := io.ReadFull(s, buf); err != nil {
			errc <- fmt.Errorf("server read: %w", err)
			return
		}
		if string(buf) != "ping" {
			errc <- fmt.Errorf("server read %q, want ping", buf)
			return
		}
		_, err := s.Write([]byte("pong"))
		errc <- err
	}()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatalf("client write: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("client read: %v", err)
	}
	if string(buf) != "pong" {
		t.Fatalf("client read %q, want pong", buf)
	}
	if err := recv(t, errc, "server side of the exchange"); err != nil {
		t.Fatal(err)
	}
}

func TestHandshake(t *testing.T) {
	fx := handshakeFixture(t)
	for _, network := range []string{"tcp", "unix"} {
		for _, v := range versions {
			for _, kind := range []tlstest.KeyKind{tlstest.ECDSA, tlstest.RSA} {
				t.Run(fmt.Sprintf("%s/%s/%v", network, versionName(v), kind), func(t *testing.T) {
					testutil.CheckLeaks(t)
					server := fx.serverConfig(kind)
					server.MinVersion, server.MaxVersion = v, v
					client := fx.clientConfig()
					client.ServerName = "localhost"
					client.MaxVersion = v
					var c, s *tls.Conn
					if network == "unix" {
						c, s = tlstest.PairUnix(t, server, client)
					} else {
						c, s = tlstest.Pair(t, server, client)
					}
					// The pair is over gatenet's sockets.
					switch network {
					case "tcp":
						if _, ok := c.NetConn().(*gatenet.TCPConn); !ok {
							t.Errorf("client conn is %T, want *gatenet.TCPConn", c.NetConn())
						}
						if _, ok := s.NetConn().(*gatenet.TCPConn); !ok {
							t.Errorf("server conn is %T, want *gatenet.TCPConn", s.NetConn())
						}
					case "unix":
						if _, ok := c.NetConn().(*gatenet.UnixConn); !ok {
							t.Errorf("client conn is %T, want *gatenet.UnixConn", c.NetConn())
						}
					}
					for side, st := range map[string]tls.ConnectionState{"client": c.ConnectionState(), "server": s.ConnectionState()} {
						if !st.HandshakeComplete || st.Version != v {
							t.Errorf("%s: HandshakeComplete %v, version %s; want true, %s", side, st.HandshakeComplete, versionName(st.Version), versionName(v))
						}
					}
					st := c.ConnectionState()
					if len(st.PeerCertificates) == 0 || len(st.VerifiedChains) == 0 {
						t.Fatalf("client saw %d peer certificates, %d verified chains", len(st.PeerCertificates), len(st.VerifiedChains))
					}
					want := map[tlstest.KeyKind]x509.PublicKeyAlgorithm{tlstest.ECDSA: x509.ECDSA, tlstest.RSA: x509.RSA}[kind]
					if got := st.PeerCertificates[0].PublicKeyAlgorithm; got != want {
						t.Errorf("server certificate key %v, want %v", got, want)
					}
					if v == tls.VersionTLS12 {
						name := tls.CipherSuiteName(st.CipherSuite)
						if sub := map[tlstest.KeyKind]string{tlstest.ECDSA: "_ECDSA_", tlstest.RSA: "_RSA_"}[kind]; !strings.Contains(name, sub) {
							t.Errorf("TLS 1.2 cipher suite %s does not match a %v certificate", name, kind)
						}
					}
					exchange(t, c, s)
				})
			}
		}
	}
}

// TestResumption: the second connection with the same client session cache
// and the same server configuration resumes, on TLS 1.2 (session tickets)
// and TLS 1.3 (PSK from a NewSessionTicket, which the client takes in when
// it first reads).
func TestResumption(t *testing.T) {
	fx := handshakeFixture(t)
	eachVersion(t, func(t *testing.T, v uint16) {
		server := fx.serverConfig(tlstest.ECDSA)
		server.MinVersion, server.MaxVersion = v, v
		client := fx.clientConfig()
		client.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		for i, wantResume := range []bool{false, true, true} {
			c, s := tlstest.Pair(t, server, client)
			exchange(t, c, s) // the client reads, so takes a 1.3 ticket in
			if got := c.ConnectionState().DidResume; got != wantResume {
				t.Errorf("connection %d: client DidResume %v, want %v", i, got, wantResume)
			}
			if got := s.ConnectionState().DidResume; got != wantResume {
				t.Errorf("connection %d: server DidResume %v, want %v", i, got, wantResume)
			}
			c.Close()
			s.Close()
		}
	})
}

// handshakeErrors is a Server.HandshakeError that sends the errors on a
// channel.
func handshakeErrors(srv *tlstest.Server) <-chan error {
	ch := make(chan error, 16)
	srv.HandshakeError = func(_ net.Addr, err error) {
		select {
		case ch <- err:
		default:
		}
	}
	return ch
}

// requireRefused fails t unless a client with cfg fails its handshake with
// srv and the server's handshake error (from herrs) says want.
func requireRefused(t testing.TB, srv *tlstest.Server, cfg *tls.Config, herrs <-chan error, want string) {
	t.Helper()
	cerr := clientFailure(t, srv, cfg)
	serr := recv(t, herrs, "server handshake error")
	t.Logf("client: %v; server: %v", cerr, serr)
	if !strings.Contains(serr.Error(), want) {
		t.Errorf("server handshake error %q", serr)
	}
}

// clientFailure dials srv with cfg and returns the client's error: from the
// handshake, or from the first Read (a TLS 1.3 client finishes its
// handshake before the server has judged its certificate, and learns of
// the rejection from the alert).
func clientFailure(t testing.TB, srv *tlstest.Server, cfg *tls.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := srv.DialContext(ctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("the client read data from a server that should have rejected it")
	}
	return err
}

func TestMutualTLS(t *testing.T) {
	fx := handshakeFixture(t)
	other, err := tlstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.ClientCert(tlstest.ECDSA, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	eachVersion(t, func(t *testing.T, v uint16) {
		server := fx.serverConfig(tlstest.ECDSA)
		server.MinVersion, server.MaxVersion = v, v
		server.ClientAuth = tls.RequireAndVerifyClientCert
		server.ClientCAs = fx.ca.Pool()
		peers := make(chan []*x509.Certificate, 1)
		srv := tlstest.NewUnstartedServer(t, server, func(c *tls.Conn) {
			peers <- c.ConnectionState().PeerCertificates
			c.Write([]byte("ok"))
		})
		herrs := handshakeErrors(srv)
		srv.Start()

		t.Run("no certificate", func(t *testing.T) {
			requireRefused(t, srv, fx.clientConfig(), herrs, "client didn't provide a certificate")
		})
		t.Run("certificate from another CA", func(t *testing.T) {
			cfg := fx.clientConfig()
			// Certificates would not do: the client offers only a
			// certificate from a CA the server asks for.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &stranger, nil }
			requireRefused(t, srv, cfg, herrs, "certificate signed by unknown authority")
		})
		t.Run("certificate", func(t *testing.T) {
			cfg := fx.clientConfig()
			cfg.Certificates = []tls.Certificate{fx.client}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := srv.DialContext(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 2)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ok" {
				t.Fatalf("read %q, %v; want ok", buf, err)
			}
			certs := recv(t, peers, "handler")
			if len(certs) == 0 || certs[0].Subject.CommonName != "client-1" {
				t.Fatalf("the server saw peer certificates %v, want client-1's", certs)
			}
		})
		srv.Close()
		if ok, failed := srv.Handshakes(); ok != 1 || failed != 2 {
			t.Errorf("server handshakes: %d ok, %d failed; want 1 and 2", ok, failed)
		}
	})
}

func TestALPN(t *testing.T) {
	fx := handshakeFixture(t)
	eachVersion(t, func(t *testing.T, v uint16) {
		server := fx.serverConfig(tlstest.ECDSA)
		server.MaxVersion = v
		server.NextProtos = []string{"h2", "http/1.1"}
		for _, tc := range []struct {
			client []string
			want   string
		}{
			{[]string{"http/1.1"}, "http/1.1"},
			{[]string{"h2", "http/1.1"}, "h2"},
			{[]string{"spdy/3", "http/1.1", "h2"}, "h2"}, // the server's preference wins
			{nil, ""},
		} {
			client := fx.clientConfig()
			client.NextProtos = tc.client
			c, s := tlstest.Pair(t, server, client)
			if got := c.ConnectionState().NegotiatedProtocol; got != tc.want {
				t.Errorf("client %q: client negotiated %q, want %q", tc.client, got, tc.want)
			}
			if got := s.ConnectionState().NegotiatedProtocol; got != tc.want {
				t.Errorf("client %q: server negotiated %q, want %q", tc.client, got, tc.want)
			}
			c.Close()
			s.Close()
		}

		// No protocol in common: the server refuses the handshake.
		srv := tlstest.NewUnstartedServer(t, server, nil)
		herrs := handshakeErrors(srv)
		srv.Start()
		client := srv.ClientConfig()
		client.NextProtos = []string{"spdy/3"}
		cerr := clientFailure(t, srv, client)
		serr := recv(t, herrs, "server handshake error")
		if !strings.Contains(serr.Error(), "unsupported application protocols") {
			t.Errorf("server handshake error %q, want unsupported application protocols", serr)
		}
		if !strings.Contains(cerr.Error(), "no application protocol") {
			t.Errorf("client error %q, want the no_application_protocol alert", cerr)
		}
	})
}

func TestSNI(t *testing.T) {
	fx := handshakeFixture(t)
	server := &tls.Config{GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		switch hello.ServerName {
		case "a.example":
			return &fx.sniA, nil
		case "b.example":
			return &fx.sniB, nil
		}
		return nil, fmt.Errorf("no certificate for %q", hello.ServerName)
	}}
	for _, v := range versions {
		for _, name := range []string{"a.example", "b.example"} {
			t.Run(versionName(v)+"/"+name, func(t *testing.T) {
				testutil.CheckLeaks(t)
				client := fx.clientConfig()
				client.ServerName = name
				client.MaxVersion = v
				c, s := tlstest.Pair(t, server, client)
				if got := s.ConnectionState().ServerName; got != name {
					t.Errorf("server saw SNI %q, want %q", got, name)
				}
				if got := c.ConnectionState().PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != name {
					t.Errorf("client got a certificate for %q, want %q", got, name)
				}
			})
		}
	}
	t.Run("unknown name", func(t *testing.T) {
		testutil.CheckLeaks(t)
		srv := tlstest.NewUnstartedServer(t, server, nil)
		herrs := handshakeErrors(srv)
		srv.Start()
		client := fx.clientConfig()
		client.ServerName = "c.example"
		if _, err := srv.DialContext(context.Background(), client); err == nil {
			t.Fatal("handshake for an unknown name succeeded")
		}
		if serr := recv(t, herrs, "server handshake error"); !strings.Contains(serr.Error(), `no certificate for "c.example"`) {
			t.Errorf("server handshake error %q", serr)
		}
	})
}
