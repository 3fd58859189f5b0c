//go:build linux && go1.27

package httptest

// startOfClosedPanics: Go 1.27's net/http/httptest panics with "Start of
// closed Server" at a start after Close.
const startOfClosedPanics = true
