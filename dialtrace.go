//go:build linux

package gatenet

import (
	"context"
	"net/http/httptrace"
	"reflect"
	"sync"
)

// A dial's net/http/httptrace events while it resolves its name. net's
// DialContext hands the resolver a context whose connect hooks are
// shadowed, so that the resolver's own connections to a DNS server are
// not reported as the dial's ConnectStart and ConnectDone, while DNSStart
// and DNSDone are. The resolver reads those hooks from a value that
// httptrace.WithClientTrace stores under a key of net's internal nettrace
// package, which gatenet cannot name: resolveContext recognizes the key
// by its type's package and name, and hands out a copy of the value with
// the two hooks cleared. A Go whose internals differ is told apart by
// TestDialHTTPTraceResolve, and left with the hooks, as before.

// resolveContext is ctx for resolving a dial's address: ctx itself unless
// it carries a ClientTrace.
func resolveContext(ctx context.Context) context.Context {
	if httptrace.ContextClientTrace(ctx) == nil {
		return ctx
	}
	return &noConnectTrace{Context: ctx}
}

// noConnectTrace is a context whose nettrace value has no connect hooks.
type noConnectTrace struct {
	context.Context
	once   sync.Once
	shadow any
}

func (c *noConnectTrace) Value(key any) any {
	v := c.Context.Value(key)
	if v == nil || !isNetTraceKey(key) {
		return v
	}
	c.once.Do(func() { c.shadow = withoutConnectHooks(v) })
	return c.shadow
}

// isNetTraceKey reports whether key is net's internal nettrace.TraceKey.
func isNetTraceKey(key any) bool {
	t := reflect.TypeOf(key)
	return t != nil && t.Name() == "TraceKey" && t.PkgPath() == "internal/nettrace"
}

// withoutConnectHooks returns a copy of v, a *nettrace.Trace, with its
// ConnectStart and ConnectDone cleared; v itself if it is not a pointer
// to a struct.
func withoutConnectHooks(v any) any {
	p := reflect.ValueOf(v)
	if p.Kind() != reflect.Pointer || p.IsNil() || p.Elem().Kind() != reflect.Struct {
		return v
	}
	cp := reflect.New(p.Elem().Type())
	cp.Elem().Set(p.Elem())
	for _, name := range []string{"ConnectStart", "ConnectDone"} {
		if f := cp.Elem().FieldByName(name); f.IsValid() && f.CanSet() && f.Kind() == reflect.Func {
			f.SetZero()
		}
	}
	return cp.Interface()
}
