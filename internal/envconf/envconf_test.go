package envconf

import (
	"errors"
	"strconv"
	"testing"
)

func TestErrorNamesVariableValueAndSyntax(t *testing.T) {
	_, cause := strconv.Atoi("x")
	err := &Error{Var: "GATENET_SHARDS", Value: "x", Want: "a positive integer", Err: cause}
	want := `gatenet: invalid GATENET_SHARDS="x": ` + cause.Error() + ` (want a positive integer)`
	if got := err.Error(); got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, strconv.ErrSyntax) {
		t.Fatal("the cause is not reachable through errors.Is")
	}
}
