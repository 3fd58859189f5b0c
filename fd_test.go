//go:build linux

package gatenet

import (
	"testing"
	"unsafe"
)

// TestNetFDSize keeps a socket's netFD, its descriptor inside, in the
// 96-byte size class: an idle server holds one per connection (the
// idle-memory measurement, idle_mem_test.go, is the whole account).
func TestNetFDSize(t *testing.T) {
	if got := unsafe.Sizeof(netFD{}); got > 96 {
		t.Fatalf("netFD is %d bytes, want at most 96", got)
	}
	// The descriptor's finalizer (internal/poll/fd.go) needs it at the
	// start of the allocation.
	if off := unsafe.Offsetof(netFD{}.pfd); off != 0 {
		t.Fatalf("netFD.pfd is at offset %d, want 0", off)
	}
}
