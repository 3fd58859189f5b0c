package envconf

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// TestUnknown: a GATENET_ variable gatenet does not read is an *Error
// naming it and its value, suggesting the known one it is closest to;
// known ones, empty ones included, and other variables are not.
func TestUnknown(t *testing.T) {
	for _, tc := range []struct {
		environ []string
		want    string // the error, "" for none
	}{
		{nil, ""},
		{[]string{"PATH=/bin", "GATENETPOLLER=x", "gatenet_poller=x", "MY_GATENET_X=1"}, ""},
		{slices.Concat(Library, Tests), ""},
		{[]string{"GATENET_POLLER=", "GATENET_SHARDS=2", "GATENET_FAULTS=slicer=1-7", "GATENET_SOAK=1", "GATENET_ENV_CHILD=ok"}, ""},
		{[]string{"GATENET_POLER=nested"},
			`gatenet: invalid GATENET_POLER="nested": gatenet reads no such variable; did you mean GATENET_POLLER? (want ` + unknownWant + `)`},
		{[]string{"GATENET_SHARDS=2", "GATENET_FAULT=slicer=1-7"},
			`gatenet: invalid GATENET_FAULT="slicer=1-7": gatenet reads no such variable; did you mean GATENET_FAULTS? (want ` + unknownWant + `)`},
		{[]string{"GATENET_ZZZ=", "GATENET_NOSUCH=1"}, // the first by name, empty or not
			`gatenet: invalid GATENET_NOSUCH="1": gatenet reads no such variable (want ` + unknownWant + `)`},
		{[]string{"GATENET_SOAKS=1"},
			`gatenet: invalid GATENET_SOAKS="1": gatenet reads no such variable; did you mean GATENET_SOAK? (want ` + unknownWant + `)`},
		{[]string{"GATENET_"}, `gatenet: invalid GATENET_="": gatenet reads no such variable (want ` + unknownWant + `)`},
	} {
		err := Unknown(tc.environ)
		if tc.want == "" {
			if err != nil {
				t.Errorf("Unknown(%q) = %v, want nil", tc.environ, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Unknown(%q) = %v, not an *Error", tc.environ, err)
			continue
		}
		if got := err.Error(); got != tc.want {
			t.Errorf("Unknown(%q) = %q, want %q", tc.environ, got, tc.want)
		}
	}
}

// deliberatelyUnknown are the misspellings tests use to check that an
// unknown variable is refused.
var deliberatelyUnknown = []string{"GATENET_POLER", "GATENET_FAULT", "GATENET_NOSUCH", "GATENET_ZZZ", "GATENET_SOAKS"}

// TestEveryVariableIsListed: every GATENET_ name in the module's sources,
// docs and CI script is in Library or Tests, so that setting it is not
// refused as unknown.
func TestEveryVariableIsListed(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skip("not in the module's tree:", err)
	}
	name := regexp.MustCompile(`\bGATENET_[A-Z0-9_]*[A-Z0-9]`)
	seen := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || d.Name() == "shared" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" && ext != ".txt" && filepath.Base(filepath.Dir(path)) != ".ci" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(b), -1) {
			seen[n] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for n, path := range seen {
		if !slices.Contains(Library, n) && !slices.Contains(Tests, n) && !slices.Contains(deliberatelyUnknown, n) {
			t.Errorf("%s (in %s) is in neither envconf.Library nor envconf.Tests: setting it would be refused as unknown", n, path)
		}
	}
	for _, n := range slices.Concat(Library, Tests) {
		if _, ok := seen[n]; !ok {
			t.Errorf("%s is listed but nothing reads or documents it", n)
		}
	}
}
