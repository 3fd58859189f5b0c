// Command apicheck records and checks the exported API of gatenet's public
// packages, one line per exported identifier, in the manner of Go's own
// api/go1.*.txt files: api/<package>.txt holds what each package exports
// on linux/amd64.
//
//	go run ./internal/cmd/apicheck      # check: exit 1 naming each difference
//	go run ./internal/cmd/apicheck -w   # write api/ anew (a deliberate API change)
//
// It type-checks the packages from the export data `go list -export`
// leaves in the build cache (go/importer), so it needs no network and no
// dependency beyond the standard library. A line removed or changed is an
// incompatible change; a line added is a compatible one; both fail the
// check until api/ is written anew, and both belong in CHANGELOG.md.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// public are the packages whose API is recorded, by import path suffix
// below the module ("" is the module's root package).
var public = []string{"", "pollfd", "faults", "tlstest", "httptest"}

const module = "github.com/gatenet/gatenet"

func main() {
	write := flag.Bool("w", false, "write api/ anew instead of checking it")
	dir := flag.String("dir", "api", "the directory of the API files")
	flag.Parse()
	if err := run(*write, *dir, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
}

func run(write bool, dir string, out io.Writer) error {
	pkgs, err := load()
	if err != nil {
		return err
	}
	failed := false
	for _, suffix := range public {
		path := module
		if suffix != "" {
			path += "/" + suffix
		}
		pkg, ok := pkgs[path]
		if !ok {
			return fmt.Errorf("package %s not loaded", path)
		}
		file := filepath.Join(dir, fileName(suffix))
		lines := apiLines(pkg)
		if write {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				return err
			}
			continue
		}
		recorded, err := readLines(file)
		if err != nil {
			return err
		}
		for _, d := range diff(recorded, lines) {
			fmt.Fprintf(out, "%s: %s\n", file, d)
			failed = true
		}
	}
	if failed {
		return fmt.Errorf("the exported API differs from api/: if the change is deliberate, " +
			"run `go run ./internal/cmd/apicheck -w` and record it in CHANGELOG.md")
	}
	return nil
}

// fileName is the API file of the package with that suffix.
func fileName(suffix string) string {
	if suffix == "" {
		return "gatenet.txt"
	}
	return strings.ReplaceAll(suffix, "/", "-") + ".txt"
}

// load type-checks the public packages, for linux/amd64, from the export
// data go list leaves in the build cache.
func load() (map[string]*types.Package, error) {
	args := []string{"list", "-export", "-deps", "-json=ImportPath,Export"}
	for _, s := range public {
		if s == "" {
			args = append(args, module)
		} else {
			args = append(args, module+"/"+s)
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	export := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for dec.More() {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		export[p.ImportPath] = p.Export
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := export[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	pkgs := map[string]*types.Package{}
	for _, s := range public {
		path := module
		if s != "" {
			path += "/" + s
		}
		pkg, err := imp.Import(path)
		if err != nil {
			return nil, err
		}
		pkgs[path] = pkg
	}
	return pkgs, nil
}

// readLines reads an API file, one line per identifier.
func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}
