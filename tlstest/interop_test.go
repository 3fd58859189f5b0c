//go:build linux

package tlstest_test

// Interoperability with a TLS stack that is not Go's: openssl s_client
// against a gatenet TLS server, and a gatenet TLS client against openssl
// s_server. CI installs openssl (.ci/run); elsewhere the tests skip
// without it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/tlstest"
)

// openssl returns the path of the openssl binary, or skips t.
func openssl(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed (CI installs it: see .ci/run); skipping the interop test")
	}
	return path
}

// writeFile writes data to name in dir and returns its path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pemFiles writes cert and key as PEM files in dir.
func pemFiles(t testing.TB, dir, name string, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM, err := tlstest.MarshalPEM(cert)
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name+".pem", certPEM), writeFile(t, dir, name+".key", keyPEM)
}

var opensslVersionFlag = map[uint16]string{tls.VersionTLS12: "-tls1_2", tls.VersionTLS13: "-tls1_3"}

// TestOpenSSLClient: openssl s_client, verifying the server against the
// CA, sends a line to a gatenet TLS server that echoes it back.
// eachInteropCase runs fn in a subtest for each TLS version, key kind,
// and with and without client certificates (mTLS), with leak checks.
func eachInteropCase(t *testing.T, fn func(t *testing.T, v uint16, kind tlstest.KeyKind, mutual bool)) {
	for _, v := range versions {
		for _, kind := range []tlstest.KeyKind{tlstest.ECDSA, tlstest.RSA} {
			for _, mutual := range []bool{false, true} {
				name := versionName(v) + "/" + kind.String()
				if mutual {
					name += "/mTLS"
				}
				t.Run(name, func(t *testing.T) {
					testutil.CheckLeaks(t)
					fn(t, v, kind, mutual)
				})
			}
		}
	}
}

// interopFixture starts an openssl test: leak checks, a watchdog, the
// openssl binary, the certificates, and a directory holding the CA's PEM.
func interopFixture(t *testing.T) (bin string, fx *certs, dir, caFile string) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	bin = openssl(t)
	fx = testCerts(t)
	dir = t.TempDir()
	return bin, fx, dir, writeFile(t, dir, "ca.pem", fx.ca.CertPEM())
}

func TestOpenSSLClient(t *testing.T) {
	bin, fx, dir, caFile := interopFixture(t)
	clientCert, clientKey := pemFiles(t, dir, "client", fx.client)
	eachInteropCase(t, func(t *testing.T, v uint16, kind tlstest.KeyKind, mutual bool) {
		server := fx.serverConfig(kind)
		if mutual {
			server.ClientAuth = tls.RequireAndVerifyClientCert
			server.ClientCAs = fx.ca.Pool()
		}
		states := make(chan tls.ConnectionState, 1)
		srv := tlstest.NewServer(t, server, func(c *tls.Conn) {
			states <- c.ConnectionState()
			c.SetDeadline(time.Now().Add(time.Minute))
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil {
				t.Errorf("server read: %v", err)
				return
			}
			c.Write([]byte("echo: " + line))
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := []string{"s_client", "-connect", srv.Addr().String(), "-CAfile", caFile,
			"-verify_return_error", "-verify_ip", "127.0.0.1", "-quiet", opensslVersionFlag[v]}
		if mutual {
			args = append(args, "-cert", clientCert, "-key", clientKey)
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdin = strings.NewReader("hello gatenet\n")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		err := cmd.Run()
		if err != nil || stdout.String() != "echo: hello gatenet\n" {
			t.Fatalf("openssl %s: %v\nstdout: %q\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		st := recv(t, states, "server connection state")
		if st.Version != v {
			t.Errorf("negotiated %s, want %s", versionName(st.Version), versionName(v))
		}
		if mutual && (len(st.PeerCertificates) == 0 || st.PeerCertificates[0].Subject.CommonName != "client-1") {
			t.Errorf("the server did not see openssl's client certificate")
		}
	})
}

var acceptRE = regexp.MustCompile(`(?m)^ACCEPT (\S+)$`)

// TestOpenSSLServer: a gatenet TLS client, verifying the server against
// the CA, fetches openssl s_server's -www status page, which reports the
// protocol and cipher openssl negotiated.
func TestOpenSSLServer(t *testing.T) {
	bin, fx, _, caFile := interopFixture(t)
	eachInteropCase(t, func(t *testing.T, v uint16, kind tlstest.KeyKind, mutual bool) {
		certFile, keyFile := pemFiles(t, t.TempDir(), "server", fx.leaf[kind])
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		args := []string{"s_server", "-accept", "127.0.0.1:0", "-cert", certFile, "-key", keyFile,
			"-www", "-naccept", "1", opensslVersionFlag[v]}
		if mutual {
			args = append(args, "-Verify", "1", "-CAfile", caFile, "-verify_return_error")
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.WaitDelay = 5 * time.Second
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill() // only if still running: a failed test
			cmd.Wait()
		}()
		// s_server prints "ACCEPT 127.0.0.1:port" once it listens.
		addrc := make(chan string, 1)
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			sc := bufio.NewScanner(stdout)
			sent := false
			for sc.Scan() {
				if m := acceptRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
					addrc <- m[1]
					sent = true
				}
			}
		}()
		var addr string
		select {
		case addr = <-addrc:
		case <-copied:
			t.Fatalf("openssl s_server exited: %v", stderr.String())
		case <-ctx.Done():
			t.Fatalf("openssl s_server did not listen within a minute: %s", stderr.String())
		}

		cfg := fx.clientConfig()
		cfg.ServerName = "localhost"
		cfg.MaxVersion = v
		if mutual {
			cfg.Certificates = []tls.Certificate{fx.client}
		}
		c, err := dialRetry(ctx, addr, cfg)
		if err != nil {
			t.Fatalf("%v\nopenssl stderr: %s", err, stderr.String())
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n")); err != nil {
			c.Close()
			t.Fatal(err)
		}
		page, err := io.ReadAll(c)
		st := c.ConnectionState()
		c.Close() // s_server exits once the client has gone
		if err != nil {
			t.Fatalf("reading the page: %v (after %q)", err, page)
		}
		if st.Version != v {
			t.Errorf("negotiated %s, want %s", versionName(st.Version), versionName(v))
		}
		checks := []string{"HTTP/1.0 200 ok\r\n", "Protocol  : " + map[uint16]string{tls.VersionTLS12: "TLSv1.2", tls.VersionTLS13: "TLSv1.3"}[v]}
		if v == tls.VersionTLS13 { // the same names in both libraries
			checks = append(checks, "Cipher    : "+tls.CipherSuiteName(st.CipherSuite))
		}
		if mutual {
			checks = append(checks, "Client certificate", "Subject: O=gatenet tlstest, CN=client-1")
		} else {
			checks = append(checks, "no client certificate available")
		}
		for _, want := range checks {
			if !strings.Contains(string(page), want) {
				t.Errorf("the page has no %q:\n%s", want, page)
			}
		}
		select {
		case <-copied:
		case <-ctx.Done():
			t.Fatal("openssl s_server did not exit after its one connection")
		}
		if err := cmd.Wait(); err != nil {
			t.Errorf("openssl s_server: %v\n%s", err, stderr.String())
		}
	})
}

// dialRetry dials addr over gatenet until it accepts (bounded by ctx) and
// runs the client handshake.
func dialRetry(ctx context.Context, addr string, cfg *tls.Config) (*tls.Conn, error) {
	var d gatenet.Dialer
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		raw, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c := tls.Client(raw, cfg)
			if err := c.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(delay):
		}
	}
}
