//go:build !race

package testutil

// Race reports whether the tests run under the race detector (race.go).
const Race = false
