//go:build linux

package gatenet

import (
	"testing"
	"unsafe"
)

// TestNetFDSize keeps a socket's netFD, its descriptor inside, in the
// 128-byte size class: an idle server holds one per connection (the
// idle-memory measurement, idle_mem_test.go, is the whole account).
func TestNetFDSize(t *testing.T) {
	if got := unsafe.Sizeof(netFD{}); got > 128 {
		t.Fatalf("netFD is %d bytes, want at most 128", got)
	}
}
