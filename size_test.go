//go:build linux

package gatenet

import (
	"testing"
	"unsafe"
)

// TestNetFDSize keeps a socket's netFD, its descriptor inside, in the
// 144-byte size class: an idle server holds one per connection (the
// idle-memory measurement, idle_mem_test.go, is the whole account).
func TestNetFDSize(t *testing.T) {
	if got := unsafe.Sizeof(netFD{}); got > 144 {
		t.Fatalf("netFD is %d bytes, want at most 144", got)
	}
}
