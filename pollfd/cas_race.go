//go:build linux && race && (amd64 || arm64)

package pollfd

const durableParks = true

// casNoRace is a compare-and-swap the race detector does not see, for
// gopark's unlock function, which runs on the system stack
// (cas_race_$GOARCH.s).
//
//go:noescape
func casNoRace(p *uintptr, old, new uintptr) bool
