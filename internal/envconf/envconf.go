// Package envconf gives every gatenet environment variable's error one
// shape, so that a mistyped GATENET_POLLER, GATENET_SHARDS or
// GATENET_FAULTS reads the same whichever constructor reports it.
package envconf

import "strconv"

// Error is an environment variable whose value gatenet cannot use. Every
// constructor that returns an error returns it (wrapped by the caller's
// usual shape, if any) while the variable stays invalid.
type Error struct {
	Var   string // the variable, e.g. "GATENET_POLLER"
	Value string // its value, as read
	Want  string // the valid syntax, for the reader to fix it
	Err   error  // what is wrong with Value
}

func (e *Error) Error() string {
	s := "gatenet: invalid " + e.Var + "=" + strconv.Quote(e.Value)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + " (want " + e.Want + ")"
}

func (e *Error) Unwrap() error { return e.Err }
