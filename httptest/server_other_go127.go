//go:build !linux && go1.27

package httptest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// NewTestServer is net/http/httptest.NewTestServer off Linux.
func NewTestServer(t testing.TB, handler http.Handler) *Server {
	return httptest.NewTestServer(t, handler)
}
