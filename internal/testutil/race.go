//go:build race

package testutil

// Race reports whether the tests run under the race detector, for the few
// that size their load by it (a test that is only meaningful without it
// has a _norace_test.go file of its own instead).
const Race = true
