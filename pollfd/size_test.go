//go:build linux

package pollfd

import (
	"testing"
	"unsafe"
)

// TestDescSize keeps a Desc in the 96-byte size class: an idle server
// holds one per connection, and what few descriptors need lives in
// descExt and gateTimer (gate.go, deadline.go).
func TestDescSize(t *testing.T) {
	if got := unsafe.Sizeof(Desc{}); got > 96 {
		t.Fatalf("Desc is %d bytes, want at most 96 (move what is rarely used out, as descExt and gateTimer do)", got)
	}
	// And a context registration, two per connection when a server waits
	// with its own context (ctxwait.go), in the 64-byte class.
	if got := unsafe.Sizeof(descCtx{}); got > 64 {
		t.Fatalf("descCtx is %d bytes, want at most 64", got)
	}
}
