//go:build linux && race && !amd64 && !arm64

package pollfd

// Race builds on other architectures have no casNoRace: their waits in
// synctest bubbles never park durably, as over net.
const durableParks = false

func casNoRace(p *uintptr, old, new uintptr) bool { panic("pollfd: no durable parks in this build") }
