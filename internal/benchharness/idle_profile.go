//go:build linux

package benchharness

// HoldIdle's heap-profile summary (IdleOptions.Profile).

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// liveAllocSites summarises the heap profile: allocations still live, by
// site, that number at least half an object per conn, in bytes and objects
// per conn. A site is the runtime's allocating call (newobject, makechan,
// …) and the first three non-runtime callers.
func liveAllocSites(n int) []string {
	// The profile is as of the last completed GC cycle, and may lag one.
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for k, _ := runtime.MemProfile(nil, true); ; {
		recs = make([]runtime.MemProfileRecord, k+64)
		m, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:m]
			break
		}
		k = m
	}
	type site struct {
		key          string
		bytes, count int64
	}
	sites := map[string]*site{}
	for i := range recs {
		key := allocSiteKey(recs[i].Stack())
		s := sites[key]
		if s == nil {
			s = &site{key: key}
			sites[key] = s
		}
		s.bytes += recs[i].InUseBytes()
		s.count += recs[i].InUseObjects()
	}
	var list []*site
	for _, s := range sites {
		if 2*s.count >= int64(n) {
			list = append(list, s)
		}
	}
	slices.SortFunc(list, func(a, b *site) int { return cmp.Compare(b.bytes, a.bytes) })
	var out []string
	var total float64
	for _, s := range list {
		per := float64(s.bytes) / float64(n)
		total += per
		out = append(out, fmt.Sprintf("%7.0f B/conn %5.2f obj/conn  %s", per, float64(s.count)/float64(n), s.key))
	}
	out = append(out, fmt.Sprintf("%7.0f B/conn in the sites above (goroutine stacks are not in the heap profile)", total))
	return out
}

// allocSiteKey names an allocation's site: the runtime function that
// allocated and the first three callers outside the runtime and the
// standard library's internal packages (this module's own count), with
// this module's path trimmed.
func allocSiteKey(stk []uintptr) string {
	frames := runtime.CallersFrames(stk)
	var alloc string
	var callers []string
	for {
		f, more := frames.Next()
		isRuntime := strings.HasPrefix(f.Function, "runtime.") || strings.HasPrefix(f.Function, "internal/")
		name := strings.TrimPrefix(f.Function, "github.com/gatenet/gatenet/")
		switch {
		case isRuntime && len(callers) == 0:
			if alloc == "" && !strings.HasPrefix(name, "runtime.mallocgc") && name != "runtime.profilealloc" {
				alloc = strings.TrimPrefix(name, "runtime.")
			}
		case !isRuntime:
			callers = append(callers, fmt.Sprintf("%s:%d", name, f.Line))
		}
		if !more || len(callers) == 3 {
			break
		}
	}
	if len(callers) == 0 {
		return alloc + " (runtime only)"
	}
	return alloc + " ← " + strings.Join(callers, " ← ")
}
