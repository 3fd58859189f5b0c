//go:build linux && !race

package pollfd

import "sync/atomic"

// durableParks says whether this build parks durably in synctest
// bubbles (sema_durable.go).
const durableParks = true

// casNoRace is atomic.CompareAndSwapUintptr: outside race builds it
// needs no detour.
//
//go:nosplit
func casNoRace(p *uintptr, old, new uintptr) bool {
	return atomic.CompareAndSwapUintptr(p, old, new)
}
