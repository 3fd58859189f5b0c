package httptest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
)

// The rest of net/http/httptest's API, re-exported so that switching the
// import path is the only change a test needs. None of it touches the
// network.

// DefaultRemoteAddr is net/http/httptest.DefaultRemoteAddr, the default
// remote address of a ResponseRecorder's request.
const DefaultRemoteAddr = httptest.DefaultRemoteAddr

// ResponseRecorder is net/http/httptest.ResponseRecorder, an
// http.ResponseWriter that records its mutations for later inspection.
type ResponseRecorder = httptest.ResponseRecorder

// NewRecorder is net/http/httptest.NewRecorder.
func NewRecorder() *ResponseRecorder { return httptest.NewRecorder() }

// NewRequest is net/http/httptest.NewRequest: an incoming server request,
// suitable for passing to an http.Handler.
func NewRequest(method, target string, body io.Reader) *http.Request {
	return httptest.NewRequest(method, target, body)
}

// NewRequestWithContext is net/http/httptest.NewRequestWithContext.
func NewRequestWithContext(ctx context.Context, method, target string, body io.Reader) *http.Request {
	return httptest.NewRequestWithContext(ctx, method, target, body)
}
