package tlstest

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatenet/gatenet/faults"
)

// HandshakeTimeout bounds the handshakes Pair and PairUnix run, and is a
// Server's default HandshakeTimeout. It is a hang detector, not a latency
// target.
const HandshakeTimeout = 30 * time.Second

// Pair returns a connected client/server pair of *tls.Conn over a gatenet
// TCP connection on 127.0.0.1, both handshaken. The two handshakes run
// concurrently, bounded by HandshakeTimeout and by t's context; a failure
// of either is fatal to t. The connections are closed at t.Cleanup; the
// listener is closed before Pair returns.
//
// A nil server configuration is DefaultServerConfig(), a nil client one
// DefaultClientConfig(). A client configuration with an empty ServerName
// and InsecureSkipVerify unset gets ServerName "127.0.0.1", as tls.Dial
// would set it (on a copy: the configuration passed in is not changed, and
// a ClientSessionCache in it stays shared).
func Pair(t testing.TB, server, client *tls.Config) (c, s *tls.Conn) {
	t.Helper()
	return pair(t, "tcp", "127.0.0.1:0", "127.0.0.1", server, client, nil)
}

// PairFaults is Pair with f (package faults) injected into both ends'
// connections from their first byte, handshakes included: a TLS test
// under short reads and writes, latency or a stall, with the real
// *tls.Conn types.
func PairFaults(t testing.TB, f *faults.Faults, server, client *tls.Config) (c, s *tls.Conn) {
	t.Helper()
	return pair(t, "tcp", "127.0.0.1:0", "127.0.0.1", server, client, f)
}

// PairUnix is Pair over a gatenet Unix stream socket whose path is in
// t.TempDir(). The ServerName it fills in is "localhost".
func PairUnix(t testing.TB, server, client *tls.Config) (c, s *tls.Conn) {
	t.Helper()
	return pair(t, "unix", socketPath(t), "localhost", server, client, nil)
}

func pair(t testing.TB, network, address, serverName string, server, client *tls.Config, f *faults.Faults) (*tls.Conn, *tls.Conn) {
	t.Helper()
	server, client = serverConfig(server), clientConfig(client, serverName)
	ctx, cancel := context.WithTimeout(t.Context(), HandshakeTimeout)
	defer cancel()

	ln, err := listen(ctx, network, address, f)
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	defer ln.Close()
	type accepted struct {
		conn *tls.Conn
		err  error
	}
	ch := make(chan accepted, 1)
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			ch <- accepted{nil, err}
			return
		}
		s := tls.Server(raw, server)
		if err := s.HandshakeContext(ctx); err != nil {
			raw.Close()
			ch <- accepted{nil, fmt.Errorf("server handshake: %w", err)}
			return
		}
		ch <- accepted{s, nil}
	}()

	raw, err := dial(ctx, network, ln.Addr().String(), f)
	if err != nil {
		ln.Close() // unblocks the Accept
		if a := <-ch; a.conn != nil {
			a.conn.Close()
		}
		t.Fatalf("tlstest: %v", err)
	}
	c := tls.Client(raw, client)
	cerr := c.HandshakeContext(ctx)
	if cerr != nil {
		// The server's handshake then fails at once instead of waiting
		// for the deadline.
		raw.Close()
	}
	a := <-ch
	if cerr != nil || a.err != nil {
		if a.conn != nil {
			a.conn.Close()
		}
		if cerr == nil {
			c.Close()
		}
		t.Fatalf("tlstest: handshake over %s failed: client: %v; server: %v", network, errOrNone(cerr), errOrNone(a.err))
	}
	s := a.conn
	t.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return c, s
}

func errOrNone(err error) any {
	if err == nil {
		return "ok"
	}
	return err
}

// serverConfig is cfg, or the default for nil.
func serverConfig(cfg *tls.Config) *tls.Config {
	if cfg == nil {
		return DefaultServerConfig()
	}
	return cfg
}

// clientConfig is cfg, or the default for nil, with ServerName set to
// serverName if it has none and verification is on (on a clone).
func clientConfig(cfg *tls.Config, serverName string) *tls.Config {
	if cfg == nil {
		cfg = DefaultClientConfig()
	} else if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
		cfg = cfg.Clone()
	} else {
		return cfg
	}
	if cfg.ServerName == "" {
		cfg.ServerName = serverName
	}
	return cfg
}

// socketPath is a path for a Unix socket in t.TempDir(), or in a directory
// of its own under os.TempDir() when that path would be too long for
// sun_path (104 bytes on the BSDs, 108 on Linux).
func socketPath(t testing.TB) string {
	t.Helper()
	const name = "tls.sock"
	p := filepath.Join(t.TempDir(), name)
	if len(p) < 100 {
		return p
	}
	dir, err := os.MkdirTemp("", "tlstest")
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p = filepath.Join(dir, name)
	if len(p) >= 100 {
		t.Fatalf("tlstest: no short enough directory for a Unix socket (%s)", p)
	}
	return p
}

// dialTLS dials address over the helpers' socket layer and runs the client
// handshake under ctx; the connection is closed if the handshake fails.
func dialTLS(ctx context.Context, network, address string, cfg *tls.Config) (*tls.Conn, error) {
	raw, err := dial(ctx, network, address, nil)
	if err != nil {
		return nil, err
	}
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return c, nil
}
