package tlstest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a TLS server on a gatenet TCP listener on 127.0.0.1. It
// accepts connections, runs the server handshake on each (bounded by
// HandshakeTimeout, through the connection's deadline as net/http does),
// and then calls its handler with the handshaken connection, one
// goroutine per connection. A connection is closed when the handler
// returns (with a close_notify alert) or when its handshake fails.
type Server struct {
	// HandshakeTimeout bounds each server-side handshake; zero means the
	// package's HandshakeTimeout. Set it before Start.
	HandshakeTimeout time.Duration
	// HandshakeError, if set, is called with the remote address and the
	// error of every failed handshake, from the connection's goroutine;
	// unset, failures are logged with t.Logf. Handshakes cut short by
	// Close are counted as failed but not reported. Set it before Start.
	HandshakeError func(remote net.Addr, err error)

	t      testing.TB
	cfg    *tls.Config
	handle func(*tls.Conn)
	ln     net.Listener

	mu      sync.Mutex
	conns   map[net.Conn]struct{} // open connections, closed by Close
	started bool
	closed  bool

	wg       sync.WaitGroup // the accept loop and the connections' goroutines
	ok, fail atomic.Int64   // handshakes
}

// NewServer starts a Server: NewUnstartedServer, then Start.
func NewServer(t testing.TB, cfg *tls.Config, handle func(*tls.Conn)) *Server {
	t.Helper()
	s := NewUnstartedServer(t, cfg, handle)
	s.Start()
	return s
}

// NewUnstartedServer returns a Server listening on a gatenet TCP listener on
// 127.0.0.1 that does not accept yet; set its fields, then call Start. A
// nil cfg is DefaultServerConfig(); a nil handle echoes what it reads
// (io.Copy(conn, conn)). The server is closed at t.Cleanup.
func NewUnstartedServer(t testing.TB, cfg *tls.Config, handle func(*tls.Conn)) *Server {
	t.Helper()
	if handle == nil {
		handle = func(c *tls.Conn) { io.Copy(c, c) }
	}
	ln, err := listen(context.Background(), "tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatalf("tlstest: %v", err)
	}
	s := &Server{t: t, cfg: serverConfig(cfg), handle: handle, ln: ln, conns: make(map[net.Conn]struct{})}
	t.Cleanup(s.Close)
	return s
}

// Start starts accepting connections. It panics if called twice.
func (s *Server) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		panic("tlstest: Server started twice")
	}
	s.started = true
	if s.closed {
		return
	}
	s.wg.Add(1)
	go s.serve()
}

// Addr returns the listener's address (127.0.0.1 and a port).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Handshakes returns how many server handshakes have succeeded and how
// many have failed so far.
func (s *Server) Handshakes() (ok, failed int64) { return s.ok.Load(), s.fail.Load() }

// ClientConfig returns a new client configuration for the server:
// ServerName "127.0.0.1", and RootCAs trusting DefaultCA and every
// certificate in the chains of the server configuration's Certificates (so
// a server certificate from another CA verifies too, as a trusted leaf).
// A server that picks its certificate with GetCertificate or for other
// names needs RootCAs or ServerName set by the caller.
func (s *Server) ClientConfig() *tls.Config {
	pool := DefaultCA().Pool()
	for _, c := range s.cfg.Certificates {
		for _, der := range c.Certificate {
			if cert, err := x509.ParseCertificate(der); err == nil {
				pool.AddCert(cert)
			}
		}
	}
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// DialContext dials the server over gatenet TCP and runs the client
// handshake under ctx. A nil cfg is ClientConfig(); an empty ServerName is
// "127.0.0.1" as in Pair. The caller closes the connection.
func (s *Server) DialContext(ctx context.Context, cfg *tls.Config) (*tls.Conn, error) {
	if cfg == nil {
		cfg = s.ClientConfig()
	}
	return dialTLS(ctx, "tcp", s.ln.Addr().String(), clientConfig(cfg, "127.0.0.1"))
}

// Close stops the server: it closes the listener and every open connection
// (so that handlers blocked on them return), then waits for the accept
// loop, the handshakes and the handlers to finish. Close is idempotent; it
// also runs at t.Cleanup.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.ln.Close()
		for c := range s.conns {
			c.Close()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *Server) serve() {
	defer s.wg.Done()
	var delay time.Duration // backoff after a failed Accept, as net/http's
	for {
		raw, err := s.ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return
			}
			if delay == 0 {
				delay = 5 * time.Millisecond
			} else if delay *= 2; delay > time.Second {
				delay = time.Second
			}
			s.t.Logf("tlstest: accept: %v; retrying in %v", err, delay)
			time.Sleep(delay)
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			raw.Close()
			return
		}
		s.conns[raw] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(raw)
	}
}

func (s *Server) serveConn(raw net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, raw)
		s.mu.Unlock()
		raw.Close()
	}()
	timeout := s.HandshakeTimeout
	if timeout <= 0 {
		timeout = HandshakeTimeout
	}
	c := tls.Server(raw, s.cfg)
	raw.SetDeadline(time.Now().Add(timeout))
	if err := c.Handshake(); err != nil {
		s.fail.Add(1)
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return // the error is Close's doing: not worth reporting
		}
		if s.HandshakeError != nil {
			s.HandshakeError(raw.RemoteAddr(), err)
		} else {
			s.t.Logf("tlstest: handshake from %v: %v", raw.RemoteAddr(), err)
		}
		return
	}
	raw.SetDeadline(time.Time{})
	s.ok.Add(1)
	s.handle(c)
	c.Close()
}
