//go:build !linux && !go1.27

package httptest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// NewTestServer, off Linux with Go 1.26, whose net/http/httptest has
// none: a server started on the loopback interface, closed when t's test
// ends, that fails the test on a handler panic and serves 500s with a nil
// handler, as Go 1.27's does (which also sends every request its Client
// makes to it, whatever the host; this one only example.com's).
func NewTestServer(t testing.TB, handler http.Handler) *Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		defer func() {
			if err := recover(); err != nil {
				if err != http.ErrAbortHandler {
					t.Errorf("httptest: panic in server handler: %v", err)
				}
				panic(http.ErrAbortHandler)
			}
		}()
		if handler != nil {
			handler.ServeHTTP(w, req)
		} else {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(s.Close)
	return s
}
