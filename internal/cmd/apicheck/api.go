package main

import (
	"fmt"
	"go/types"
	"regexp"
	"slices"
	"strings"
)

// apiLines lists pkg's exported API, sorted, one line per identifier, as
// Go's api files do:
//
//	pkg gatenet, func Dial(string, string) (net.Conn, error)
//	pkg gatenet, method (*TCPConn) Read([]uint8) (int, error)
//	pkg gatenet, type Dialer struct
//	pkg gatenet, type Dialer struct, Timeout time.Duration
//	pkg gatenet, type Pollable interface, Close() error
//	pkg faults, const Read Dir = 1
//	pkg pollfd, var ErrClosing error
//
// Methods are the method sets of T and *T, promoted ones included, so
// that an embedded field's change shows where users see it. An interface
// lists its exported methods; an unexported one makes it sealed, recorded
// as "type T interface, unexported methods".
func apiLines(pkg *types.Package) []string {
	prefix := "pkg " + pkg.Name() + ", "
	qual := func(p *types.Package) string {
		if p == pkg {
			return ""
		}
		return p.Name()
	}
	typ := func(t types.Type) string { return types.TypeString(t, qual) }
	sig := func(s *types.Signature) string { return signature(s, typ) }
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			add("const %s %s = %s", name, typ(obj.Type()), obj.Val().ExactString())
		case *types.Var:
			add("var %s %s", name, typ(obj.Type()))
		case *types.Func:
			add("func %s%s", name, sig(obj.Type().(*types.Signature)))
		case *types.TypeName:
			typeLines(obj, add, typ, sig)
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

// signature is s as Go's api files write it: parameter and result types
// without their names, which a caller cannot see.
func signature(s *types.Signature, typ func(types.Type) string) string {
	list := func(t *types.Tuple, variadic bool) []string {
		var out []string
		for i := range t.Len() {
			ts := typ(t.At(i).Type())
			if variadic && i == t.Len()-1 {
				ts = "..." + strings.TrimPrefix(ts, "[]")
			}
			out = append(out, ts)
		}
		return out
	}
	str := "(" + strings.Join(list(s.Params(), s.Variadic()), ", ") + ")"
	switch res := list(s.Results(), false); len(res) {
	case 0:
	case 1:
		str += " " + res[0]
	default:
		str += " (" + strings.Join(res, ", ") + ")"
	}
	return str
}

// typeLines lists an exported type: its kind, its exported fields or
// interface methods, and the exported methods of T and *T.
func typeLines(obj *types.TypeName, add func(string, ...any), typ func(types.Type) string, sig func(*types.Signature) string) {
	name := obj.Name()
	if obj.IsAlias() {
		add("type %s = %s", name, typ(types.Unalias(obj.Type())))
		return
	}
	switch u := obj.Type().Underlying().(type) {
	case *types.Struct:
		add("type %s struct", name)
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case !f.Exported():
			case f.Embedded():
				add("type %s struct, embedded %s", name, typ(f.Type()))
			default:
				add("type %s struct, %s %s", name, f.Name(), typ(f.Type()))
			}
		}
	case *types.Interface:
		add("type %s interface", name)
		for i := range u.NumMethods() {
			m := u.Method(i)
			if !m.Exported() {
				add("type %s interface, unexported methods", name)
				continue
			}
			add("type %s interface, %s%s", name, m.Name(), sig(m.Type().(*types.Signature)))
		}
		return // an interface's methods are its lines above
	default:
		add("type %s %s", name, typ(u))
	}
	for _, recv := range []types.Type{obj.Type(), types.NewPointer(obj.Type())} {
		ms := types.NewMethodSet(recv)
		for i := range ms.Len() {
			m := ms.At(i).Obj()
			if !m.Exported() {
				continue
			}
			if _, isPtr := recv.(*types.Pointer); isPtr && types.NewMethodSet(obj.Type()).Lookup(m.Pkg(), m.Name()) != nil {
				continue // a value method: listed once, with the value receiver
			}
			add("method (%s) %s%s", typ(recv), m.Name(), sig(m.Type().(*types.Signature)))
		}
	}
}

// keyPattern finds what a line names, without its type or signature: a
// line whose key stays but whose rest changes is a changed signature.
var keyPattern = regexp.MustCompile(`^(pkg [^,]+, (?:` +
	`method \([^)]*\) \w+|` +
	`func \w+|` +
	`type \w+ (?:struct|interface), (?:embedded \S+|\w+)|` +
	`type \w+|` +
	`(?:const|var) \w+))`)

func keyOf(line string) string {
	if m := keyPattern.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return line
}

// diff names each difference between the recorded API and the current
// one: a removed or changed identifier is incompatible, an added one
// compatible.
func diff(recorded, current []string) []string {
	was := map[string][]string{}
	for _, l := range recorded {
		was[keyOf(l)] = append(was[keyOf(l)], l)
	}
	is := map[string][]string{}
	for _, l := range current {
		is[keyOf(l)] = append(is[keyOf(l)], l)
	}
	var out []string
	for _, l := range recorded {
		if slices.Contains(current, l) {
			continue
		}
		if now := is[keyOf(l)]; len(now) > 0 {
			out = append(out, fmt.Sprintf("incompatible: changed: %s\n\tnow: %s", l, strings.Join(now, "\n\tnow: ")))
		} else {
			out = append(out, "incompatible: removed: "+l)
		}
	}
	for _, l := range current {
		if slices.Contains(recorded, l) || len(was[keyOf(l)]) > 0 {
			continue // unchanged, or reported as changed above
		}
		out = append(out, "compatible: added: "+l)
	}
	return out
}
