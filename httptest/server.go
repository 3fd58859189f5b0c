//go:build linux

// Adapted from Go's net/http/httptest/server.go. Copyright 2011 The Go
// Authors. All rights reserved. Use of this source code is governed by a
// BSD-style license that can be found in the LICENSE-GO file in this
// directory (Go's LICENSE); gatenet's own code is under ../LICENSE.

package httptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
)

// A Server is an HTTP server listening on a system-chosen port on the
// local loopback interface, for use in end-to-end HTTP tests. It is
// net/http/httptest.Server with a gatenet listener and a Client that dials
// through gatenet.
type Server struct {
	URL      string // base URL of form http://ipaddr:port with no trailing slash
	Listener net.Listener

	// EnableHTTP2 controls whether HTTP/2 is enabled
	// on the server. It must be set between calling
	// NewUnstartedServer and calling Server.StartTLS.
	EnableHTTP2 bool

	// TLS is the optional TLS configuration, populated with a new config
	// after TLS is started. If set on an unstarted server before StartTLS
	// is called, existing fields are copied into the new config.
	TLS *tls.Config

	// Config may be changed after calling NewUnstartedServer and
	// before Start or StartTLS.
	Config *http.Server

	// Faults, set between NewUnstartedServer and Start or StartTLS, is
	// injected into the listener (its Accept and every connection it
	// accepts) and into every connection the Client dials (package
	// faults): the server and its client see the same adversity.
	Faults *faults.Faults

	// certificate is a parsed version of the TLS config certificate, if present.
	certificate *x509.Certificate

	// NewTestServer's (testserver.go): its test, the start its Client
	// makes once unless Start or StartTLS came first, and the two
	// listeners that start serves HTTP and HTTPS on.
	t                 testing.TB
	startOnce         sync.Once
	testLn, testTLSLn net.Listener
	started           bool // guarded by mu

	// wg counts the number of outstanding HTTP requests on this server.
	// Close blocks until all requests are finished.
	wg sync.WaitGroup

	mu     sync.Mutex // guards closed and conns
	closed bool
	conns  map[net.Conn]http.ConnState // except terminal states

	// client is configured for use with the server.
	// Its transport is automatically closed when Close is called.
	client *http.Client
}

// newLocalListener listens on 127.0.0.1:0 (else [::1]:0) with gatenet, or
// on the -httptest.serve address.
func newLocalListener() net.Listener {
	if serve := serveFlag(); serve != "" {
		l, err := gatenet.Listen("tcp", serve)
		if err != nil {
			panic(fmt.Sprintf("httptest: failed to listen on %v: %v", serve, err))
		}
		return l
	}
	l, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		if l, err = gatenet.Listen("tcp6", "[::1]:0"); err != nil {
			panic(fmt.Sprintf("httptest: failed to listen on a port: %v", err))
		}
	}
	return l
}

// serveFlag is the value of -httptest.serve. When debugging a particular
// HTTP server-based test,
//
//	go test -run='^BrokenTest$' -httptest.serve=127.0.0.1:8000
//
// starts the broken server so you can interact with it manually. The flag
// is net/http/httptest's (this package imports it, so its init registers
// the flag, only when the command line mentions it); it is read here so
// both packages honour the one flag. Don't depend on it.
func serveFlag() string {
	if f := flag.Lookup("httptest.serve"); f != nil {
		return f.Value.String()
	}
	return ""
}

// NewServer starts and returns a new [Server].
// The caller should call Close when finished, to shut it down.
func NewServer(handler http.Handler) *Server {
	ts := NewUnstartedServer(handler)
	ts.Start()
	return ts
}

// NewUnstartedServer returns a new [Server] but doesn't start it.
//
// After changing its configuration, the caller should call Start or
// StartTLS.
//
// The caller should call Close when finished, to shut it down.
func NewUnstartedServer(handler http.Handler) *Server {
	return &Server{
		Listener: newLocalListener(),
		Config:   &http.Server{Handler: handler},
	}
}

// Start starts a server from NewUnstartedServer, or NewTestServer's on
// the loopback interface.
func (s *Server) Start() {
	s.startCommon(true)
	s.injectFaults()
	if s.client == nil {
		tr := &http.Transport{}
		tr.DialContext = s.dialContext(tr, "80")
		s.client = &http.Client{Transport: tr}
	}
	s.URL = "http://" + s.Listener.Addr().String()
	s.wrap()
	s.goServe(s.Listener)
	if serve := serveFlag(); serve != "" {
		fmt.Fprintln(os.Stderr, "httptest: serving on", s.URL)
		select {}
	}
}

// dialContext is the Client's dialer: gatenet's, with requests to
// example.com and its subdomains on port sent to the server. User code may
// set the Transport's deprecated Dial, which then takes over, as in
// net/http/httptest.
func (s *Server) dialContext(tr *http.Transport, port string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	dialer := gatenet.Dialer{Faults: s.Faults}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		//lint:ignore SA1019 as net/http/httptest's, the Client honours a Dial set by user code
		if dial := tr.Dial; dial != nil {
			return dial(network, addr)
		}
		if addr == "example.com:"+port || strings.HasSuffix(addr, ".example.com:"+port) {
			addr = s.Listener.Addr().String()
		}
		return dialer.DialContext(ctx, network, addr)
	}
}

// injectFaults attaches s.Faults to the listener, if set.
func (s *Server) injectFaults() {
	if s.Faults == nil {
		return
	}
	ln, ok := s.Listener.(gatenet.Pollable)
	if !ok {
		panic(fmt.Sprintf("httptest: Faults: the Listener (%T) is not gatenet's", s.Listener))
	}
	if err := gatenet.InjectFaults(ln, s.Faults); err != nil {
		panic(fmt.Sprintf("httptest: Faults: %v", err))
	}
}

// StartTLS starts TLS on a server from NewUnstartedServer, or
// NewTestServer's on the loopback interface.
func (s *Server) StartTLS() {
	s.startCommon(true)
	s.injectFaults()
	if s.client == nil {
		s.client = &http.Client{}
	}
	tlsClientConfig, err := s.initTLS()
	if err != nil {
		panic(fmt.Sprintf("httptest: NewTLSServer: %v", err))
	}
	tr := &http.Transport{
		TLSClientConfig:   tlsClientConfig,
		ForceAttemptHTTP2: s.EnableHTTP2,
	}
	tr.DialContext = s.dialContext(tr, "443")
	s.client.Transport = tr
	s.Listener = tls.NewListener(s.Listener, s.TLS)
	s.URL = "https://" + s.Listener.Addr().String()
	s.wrap()
	s.goServe(s.Listener)
}

// initTLS sets s.TLS up to serve (a clone of the config set before the
// start, else a new one; the test certificate unless it has one; h2 or
// http/1.1 unless it names protocols) and returns a client config that
// trusts the certificate.
func (s *Server) initTLS() (*tls.Config, error) {
	cert, err := localhostCert()
	if err != nil {
		return nil, err
	}
	if existing := s.TLS; existing != nil {
		s.TLS = existing.Clone()
	} else {
		s.TLS = new(tls.Config)
	}
	if s.TLS.NextProtos == nil {
		nextProtos := []string{"http/1.1"}
		if s.EnableHTTP2 {
			nextProtos = []string{"h2"}
		}
		s.TLS.NextProtos = nextProtos
	}
	if len(s.TLS.Certificates) == 0 {
		s.TLS.Certificates = []tls.Certificate{cert}
	}
	s.certificate, err = x509.ParseCertificate(s.TLS.Certificates[0].Certificate[0])
	if err != nil {
		return nil, err
	}
	certpool := x509.NewCertPool()
	certpool.AddCert(s.certificate)
	return &tls.Config{RootCAs: certpool}, nil
}

// startCommon is what every start does first, as net/http/httptest's: a
// second start panics, and, with the Go 1.27 httptest this mirrors (and
// for NewTestServer's server with any Go), so does a start after Close; a NewTestServer server started on the
// loopback interface (loopback) gets its listener now, and its Client
// no longer starts it.
func (s *Server) startCommon(loopback bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.URL != "" {
		panic("Server already started")
	}
	if s.closed && (startOfClosedPanics || s.t != nil) { // NewTestServer's always refuses, as Go 1.27's
		panic("Start of closed Server")
	}
	s.started = true
	if s.t != nil && loopback {
		s.startOnce.Do(func() {})
		if s.Listener != nil {
			panic("Server.Listener is unexpectedly set")
		}
		s.Listener = newLocalListener()
	}
}

// NewTLSServer starts and returns a new [Server] using TLS.
// The caller should call Close when finished, to shut it down.
func NewTLSServer(handler http.Handler) *Server {
	ts := NewUnstartedServer(handler)
	ts.StartTLS()
	return ts
}

type closeIdleTransport interface {
	CloseIdleConnections()
}

// Close shuts down the server and blocks until all outstanding
// requests on this server have completed.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, ln := range []net.Listener{s.Listener, s.testLn, s.testTLSLn} {
			if ln != nil {
				ln.Close()
			}
		}
		s.Config.SetKeepAlivesEnabled(false)
		for c, st := range s.conns {
			// Force-close idle connections (between requests) and new
			// ones (connected, no request yet), as httptest does; active
			// ones are the outstanding requests Close waits for.
			if st == http.StateIdle || st == http.StateNew {
				s.closeConn(c)
			}
		}
		// If this server doesn't shut down in 5 seconds, tell the user why.
		t := time.AfterFunc(5*time.Second, s.logCloseHangDebugInfo)
		defer t.Stop()
	}
	s.mu.Unlock()

	// Not part of Server's correctness, but assume most users will be
	// using the standard transport, so help them out and close any idle
	// connections for them.
	if t, ok := http.DefaultTransport.(closeIdleTransport); ok {
		t.CloseIdleConnections()
	}

	// Also close the client idle connections.
	if s.client != nil {
		if t, ok := s.client.Transport.(closeIdleTransport); ok {
			t.CloseIdleConnections()
		}
	}

	s.wg.Wait()
}

func (s *Server) logCloseHangDebugInfo() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf strings.Builder
	buf.WriteString("httptest.Server blocked in Close after 5 seconds, waiting for connections:\n")
	for c, st := range s.conns {
		fmt.Fprintf(&buf, "  %T %p %v in state %v\n", c, c, c.RemoteAddr(), st)
	}
	log.Print(buf.String())
}

// CloseClientConnections closes any open HTTP connections to the test Server.
func (s *Server) CloseClientConnections() {
	s.mu.Lock()
	nconn := len(s.conns)
	ch := make(chan struct{}, nconn)
	for c := range s.conns {
		go s.closeConnChan(c, ch)
	}
	s.mu.Unlock()

	// Wait for outstanding closes to finish, for at most 5 s, as
	// httptest does (golang.org/issue/14291).
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for i := 0; i < nconn; i++ {
		select {
		case <-ch:
		case <-timer.C:
			// Too slow. Give up.
			return
		}
	}
}

// Certificate returns the certificate used by the server, or nil if
// the server doesn't use TLS.
func (s *Server) Certificate() *x509.Certificate {
	return s.certificate
}

// Client returns an HTTP client configured for making requests to the
// server. Its Transport dials through gatenet, is configured to trust the
// server's TLS test certificate (speaking HTTP/2 when EnableHTTP2 is set)
// and will close its idle connections on [Server.Close].
// Use Server.URL as the base URL to send requests to the server.
// The returned client will also redirect any requests to "example.com"
// or its subdomains to the server. A NewTestServer server not started
// with Start or StartTLS is started by the first call (testserver.go).
func (s *Server) Client() *http.Client {
	if s.t != nil {
		s.startOnce.Do(s.startTestNet)
	}
	return s.client
}

func (s *Server) goServe(ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.Config.Serve(ln)
	}()
}

// wrap installs the connection state-tracking hook to know which
// connections are idle.
func (s *Server) wrap() {
	oldHook := s.Config.ConnState
	s.Config.ConnState = func(c net.Conn, cs http.ConnState) {
		s.mu.Lock()
		defer s.mu.Unlock()

		switch cs {
		case http.StateNew:
			if _, exists := s.conns[c]; exists {
				panic("invalid state transition")
			}
			if s.conns == nil {
				s.conns = make(map[net.Conn]http.ConnState)
			}
			// Add c to the set of tracked conns and increment it to the
			// waitgroup.
			s.wg.Add(1)
			s.conns[c] = cs
			if s.closed {
				// Probably just a socket-late-binding dial from
				// the default transport that lost the race (and
				// thus this connection is now idle and will
				// never be used).
				s.closeConn(c)
			}
		case http.StateActive:
			if oldState, ok := s.conns[c]; ok {
				if oldState != http.StateNew && oldState != http.StateIdle {
					panic("invalid state transition")
				}
				s.conns[c] = cs
			}
		case http.StateIdle:
			if oldState, ok := s.conns[c]; ok {
				if oldState != http.StateActive {
					panic("invalid state transition")
				}
				s.conns[c] = cs
			}
			if s.closed {
				s.closeConn(c)
			}
		case http.StateHijacked, http.StateClosed:
			// Remove c from the set of tracked conns and decrement it from the
			// waitgroup, unless it was previously removed.
			if _, ok := s.conns[c]; ok {
				delete(s.conns, c)
				// Keep Close from returning until the user's ConnState hook
				// (if any) finishes.
				defer s.wg.Done()
			}
		}
		if oldHook != nil {
			oldHook(c, cs)
		}
	}
}

// closeConn closes c.
// s.mu must be held.
func (s *Server) closeConn(c net.Conn) { s.closeConnChan(c, nil) }

// closeConnChan is like closeConn, but takes an optional channel to receive a value
// when the goroutine closing c is done.
func (s *Server) closeConnChan(c net.Conn, done chan<- struct{}) {
	c.Close()
	if done != nil {
		done <- struct{}{}
	}
}
