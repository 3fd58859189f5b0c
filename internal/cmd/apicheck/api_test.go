package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"strings"
	"testing"
)

const fixture = `package fix

const Size = 4
const Name string = "x"

var Default *T

type T struct {
	Exported int
	hidden   int
	Inner
}

type Inner struct{ Deep string }

func (Inner) Promoted() {}

func (t T) Value(a, b int) (n int, err error) { return }
func (t *T) Pointer(xs ...string)           {}
func (t *T) unexported()                     {}

type Sealed interface {
	Close() error
	seal()
}

type Alias = T

func New(name string) *T { return nil }
func helper()            {}
`

func fixturePackage(t *testing.T) *types.Package {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fix.go", fixture, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := new(types.Config).Check("example.com/fix", fset, []*ast.File{f}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pkg
}

func TestAPILines(t *testing.T) {
	requireLines(t, "apiLines", apiLines(fixturePackage(t)),
		"pkg fix, const Name string = \"x\"",
		"pkg fix, const Size untyped int = 4",
		"pkg fix, func New(string) *T",
		"pkg fix, method (*T) Pointer(...string)",
		"pkg fix, method (Inner) Promoted()",
		"pkg fix, method (T) Promoted()",
		"pkg fix, method (T) Value(int, int) (int, error)",
		"pkg fix, type Alias = T",
		"pkg fix, type Inner struct",
		"pkg fix, type Inner struct, Deep string",
		"pkg fix, type Sealed interface",
		"pkg fix, type Sealed interface, Close() error",
		"pkg fix, type Sealed interface, unexported methods",
		"pkg fix, type T struct",
		"pkg fix, type T struct, Exported int",
		"pkg fix, type T struct, embedded Inner",
		"pkg fix, var Default *T",
	)
}

// requireLines fails t unless got is want, line for line.
func requireLines(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("%s:\n%s\nwant:\n%s", what, g, w)
	}
}

func TestDiff(t *testing.T) {
	recorded := []string{
		"pkg fix, func New(string) *T",
		"pkg fix, func Old()",
		"pkg fix, type T struct, Exported int",
	}
	current := []string{
		"pkg fix, func Added(int) error",
		"pkg fix, func New(string, int) *T",
		"pkg fix, type T struct, Exported int",
	}
	requireLines(t, "diff", diff(recorded, current),
		"incompatible: changed: pkg fix, func New(string) *T\n\tnow: pkg fix, func New(string, int) *T",
		"incompatible: removed: pkg fix, func Old()",
		"compatible: added: pkg fix, func Added(int) error",
	)
	if d := diff(recorded, recorded); len(d) != 0 {
		t.Errorf("diff of equal APIs: %q", d)
	}
}
