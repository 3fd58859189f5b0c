//go:build !linux

package httptest

import (
	"net/http"
	"net/http/httptest"
)

// Off Linux gatenet delegates to the standard library, and so does this
// package: Server is net/http/httptest.Server and the constructors are
// httptest's, so code written against this package builds everywhere.

// Server is net/http/httptest.Server off Linux.
type Server = httptest.Server

// NewServer is net/http/httptest.NewServer off Linux.
func NewServer(handler http.Handler) *Server { return httptest.NewServer(handler) }

// NewTLSServer is net/http/httptest.NewTLSServer off Linux.
func NewTLSServer(handler http.Handler) *Server { return httptest.NewTLSServer(handler) }

// NewUnstartedServer is net/http/httptest.NewUnstartedServer off Linux.
func NewUnstartedServer(handler http.Handler) *Server { return httptest.NewUnstartedServer(handler) }
