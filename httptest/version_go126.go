//go:build linux && !go1.27

package httptest

// startOfClosedPanics: Go 1.26's net/http/httptest starts a closed server
// (serving on its closed listener) without a word.
const startOfClosedPanics = false
