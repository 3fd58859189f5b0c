// Package pollhook hands gatenet's descriptor layer (internal/poll) what
// pollfd keeps out of its exported API. pollfd sets the hooks in its init;
// this package imports nothing of gatenet's, so pollfd can import it
// without a cycle, and being internal it is no API either.
package pollhook

// Kick is pollfd's Desc.kick, a func(*pollfd.Desc, pollfd.Mode) (typed any
// here, since naming pollfd's types would import it): it wakes mode's
// waiter as an edge would, with no event behind it, for the fault layer.
// Set by pollfd's init, before any package importing pollfd initializes;
// internal/poll asserts it once into a typed variable.
var Kick any
