//go:build linux

// Adapted from Go 1.27's net/http/httptest/server.go. Copyright 2011 The
// Go Authors. All rights reserved. Use of this source code is governed by
// a BSD-style license that can be found in the LICENSE-GO file in this
// directory (Go's LICENSE); gatenet's own code is under ../LICENSE.

package httptest

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/gatenet/gatenet"
)

// NewTestServer returns a new [Server] for a test, as Go 1.27's
// net/http/httptest.NewTestServer does: the server is closed when t's
// test ends, a handler panic other than [http.ErrAbortHandler] fails the
// test, and a nil handler serves 500 responses to all requests (never
// [http.DefaultServeMux]). Where net/http/httptest's serves on an
// in-memory network, this one serves on gatenet loopback sockets, which
// work in testing/synctest bubbles too (fake time, see the gatenet
// package). Unless Start or StartTLS comes first, the first call to
// Client starts it: the client sends every request to the server, HTTP
// and HTTPS alike, whatever its host, Server.URL is "http://example.com"
// and Server.Listener is not set. Built with Go 1.26 it is gatenet's
// addition, with the same behaviour.
func NewTestServer(t testing.TB, handler http.Handler) *Server {
	s := &Server{
		t:      t,
		Config: &http.Server{Handler: testServerHandler{t: t, h: handler}},
	}
	t.Cleanup(s.Close)
	return s
}

// testServerHandler is NewTestServer's handler: h, with a panic reported
// to the test.
type testServerHandler struct {
	t testing.TB
	h http.Handler
}

func (h testServerHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	defer func() {
		if err := recover(); err != nil {
			if err != http.ErrAbortHandler {
				// The logging http.Server would do, in the test's output.
				const size = 64 << 10
				buf := make([]byte, size)
				buf = buf[:runtime.Stack(buf, false)]
				h.t.Errorf("httptest: panic in server handler: %v\n%s", err, buf)
			}
			panic(http.ErrAbortHandler) // http.Server then logs nothing
		}
	}()
	if h.h != nil {
		h.h.ServeHTTP(w, req)
	} else {
		w.WriteHeader(http.StatusInternalServerError)
	}
}

// startTestNet is a NewTestServer server's start by its Client, where
// net/http/httptest's starts an in-memory network: two gatenet listeners
// on the loopback interface, one serving HTTP and one HTTPS, to which the
// client sends every request, by scheme, whatever its address.
func (s *Server) startTestNet() {
	s.startCommon(false)
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		s.testTLSLn, err = gatenet.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			ln.Close()
		}
	}
	if err != nil {
		panic(fmt.Sprintf("httptest: NewTestServer: failed to listen on a port: %v", err))
	}
	s.testLn = ln
	for _, ln := range []net.Listener{s.testLn, s.testTLSLn} {
		if s.Faults != nil {
			if err := gatenet.InjectFaults(ln.(gatenet.Pollable), s.Faults); err != nil {
				panic(fmt.Sprintf("httptest: Faults: %v", err))
			}
		}
	}
	tlsClientConfig, err := s.initTLS()
	if err != nil {
		panic(fmt.Sprintf("httptest: NewTestServer: %v", err))
	}
	tlsClientConfig.InsecureSkipVerify = true // no host name to check: every request goes here
	tr := &http.Transport{TLSClientConfig: tlsClientConfig, ForceAttemptHTTP2: s.EnableHTTP2}
	dialer := gatenet.Dialer{Faults: s.Faults}
	var plain, secure sync.Once
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		plain.Do(func() { s.serveUnlessClosed(s.testLn) })
		return dialer.DialContext(ctx, "tcp", s.testLn.Addr().String())
	}
	tr.DialTLSContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		secure.Do(func() { s.serveUnlessClosed(tls.NewListener(s.testTLSLn, s.TLS)) })
		c, err := dialer.DialContext(ctx, "tcp", s.testTLSLn.Addr().String())
		if err != nil {
			return nil, err
		}
		return tls.Client(c, tr.TLSClientConfig), nil
	}
	s.client = &http.Client{Transport: tr}
	s.URL = "http://example.com"
	s.wrap()
}

// serveUnlessClosed serves ln, one of startTestNet's listeners, from its
// first dial on: an Accept parked before any dial of a testing/synctest
// bubble reached its listener is not durably blocked (see the gatenet
// package), and would keep a bubble that has not sent that kind of
// request yet from moving its clock. After Close nothing is served: the
// dial is refused.
func (s *Server) serveUnlessClosed(ln net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.goServe(ln)
	}
}
