//go:build linux && !race

package gatenet_test

// The stack a parked goroutine keeps. A goroutine parked in Read or
// WaitRead for an idle connection holds on to its stack for as long as the
// connection idles, and the runtime shrinks a stack only when less than a
// quarter of it is in use: if the path to the park overflows the initial
// 2 KiB, the goroutine costs 4 KiB for good. net's path (RawConn.Read or
// Read, through the runtime's poller) leaves a caller about 500–600 bytes
// of frames; gatenet's must leave room too (pollfd's gate.go, "Stack
// depth"). Without the race detector only: it doubles the stack guard.

import (
	"context"
	"net"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
	"unsafe"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// callerFrames calls f under k frames of stackPadFrame bytes each, as a
// handler's own frames would sit above its blocking call.
//
//go:noinline
func callerFrames(k int, f func()) {
	if k == 0 {
		f()
		return
	}
	callerFrames(k-1, f)
}

// stackPadFrame is callerFrames' frame on amd64: return address, frame
// pointer, two spilled arguments (int, func) and its locals.
const stackPadFrame = 32

// parkedStackGrowth parks one goroutine per conn of servers in park, each
// under k callerFrames, until every client writes a byte; it returns how
// many of the goroutines' stacks were moved (grown) by then, and the
// errors park returned.
func parkedStackGrowth(t *testing.T, servers, clients []net.Conn, k int, park func(net.Conn) error) (grew int, errs []error) {
	results := make(chan parkResult, len(servers))
	parks0 := pollfd.Default().Stats().Parks
	for _, s := range servers {
		go parkAndReport(s, k, park, results)
	}
	// Wake them only once every one has parked (the deepest path).
	for deadline := time.Now().Add(time.Minute); pollfd.Default().Stats().Parks-parks0 < uint64(len(servers)); {
		if time.Now().After(deadline) || len(results) > 0 {
			for _, c := range clients {
				c.Write([]byte{1}) // release the others
			}
			for range servers {
				if r := <-results; r.err != nil {
					errs = append(errs, r.err)
				}
			}
			t.Fatalf("goroutines returned before they were woken (errors: %v)", errs)
		}
		time.Sleep(time.Millisecond)
	}
	for _, c := range clients {
		if _, err := c.Write([]byte{1}); err != nil {
			t.Errorf("waking: %v", err)
		}
	}
	for range servers {
		r := <-results
		if r.grew {
			grew++
		}
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	return grew, errs
}

type parkResult struct {
	grew bool
	err  error
}

// parkAndReport is a parked goroutine's entry: a plain function with a
// small frame, so that the caller frames are callerFrames'. A stack that
// grows is copied, so the address of a local in this frame changes.
func parkAndReport(c net.Conn, k int, park func(net.Conn) error, results chan<- parkResult) {
	var here byte
	before := uintptr(unsafe.Pointer(&here))
	var err error
	callerFrames(k, func() { err = park(c) })
	results <- parkResult{uintptr(unsafe.Pointer(&here)) != before, err}
}

// TestParkedStackDepth: 64 goroutines parked at once in WaitRead (with a
// background or a cancellable context) or in Read, each under 256 bytes of
// caller frames (plus the harness's own), wake on data with their 2 KiB
// stacks unmoved — most of them: a park that runs through one of the
// allocator's slow paths goes deeper. It measures a server's steady state:
// the conns have parked once before and no GC intervenes (a GC makes
// allocations assist it; a context's first wait on a conn registers it).
// The limit is least for Read: between 256 and 288 bytes of caller frames
// (docs/DESIGN.md, "Stack depth", has each path's), so a frame added under
// Read's park fails this test. A control with 1.5 KiB of caller frames
// must see every stack grow, or the detection is broken.
func TestParkedStackDepth(t *testing.T) {
	testutil.CheckLeaks(t)
	const (
		conns    = 64
		fewGrown = conns / 2
		k        = 256 / stackPadFrame
		kControl = 1536 / stackPadFrame
	)
	// No collection between the warm-up and the measurement: a GC's
	// assists deepen allocations.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	parks := []struct {
		name     string
		park     func(net.Conn) error
		consumes bool // else each round's byte is read after it
	}{
		{"WaitRead", func(c net.Conn) error { return c.(*gatenet.TCPConn).WaitRead(context.Background()) }, false},
		{"WaitRead-ctx", func(c net.Conn) error { return c.(*gatenet.TCPConn).WaitRead(ctx) }, false},
		{"Read", func(c net.Conn) error {
			var b [1]byte
			_, err := c.Read(b[:])
			return err
		}, true},
	}
	for _, p := range parks {
		t.Run(p.name, func(t *testing.T) {
			runtime.GC()
			var clients, servers []net.Conn
			for range conns {
				c, s := testutil.TCPPair(t)
				clients, servers = append(clients, c), append(servers, s)
			}
			// round parks every conn's goroutine under frames of caller
			// frames and reports how many stacks grew.
			round := func(what string, frames int) int {
				grew, errs := parkedStackGrowth(t, servers, clients, frames, p.park)
				if len(errs) > 0 {
					t.Fatalf("parking: %v", errs[0])
				}
				t.Logf("%s, %d bytes of caller frames: %d of %d stacks grew", what, frames*stackPadFrame, grew, conns)
				if !p.consumes {
					readOne(t, servers)
				}
				return grew
			}
			round("warm-up", k)
			// A park can still run through a slow path of the runtime
			// now and then (a machine under load, a scheduler detour).
			// The slim path is the one that must exist: one round of
			// three showing it is enough, and a path that is too deep
			// fails all three.
			best := conns
			for i := 0; i < 3 && best > fewGrown; i++ {
				best = min(best, round("measured", k))
			}
			if best > fewGrown {
				t.Errorf("%d bytes of caller frames: at best %d of %d stacks grew in 3 rounds, want at most %d",
					k*stackPadFrame, best, conns, fewGrown)
			}
			if grew := round("control", kControl); grew != conns {
				t.Errorf("%d bytes of caller frames: %d of %d stacks grew, want all (the detection is broken)",
					kControl*stackPadFrame, grew, conns)
			}
		})
	}
}

// readOne reads the byte each conn holds.
func readOne(t *testing.T, conns []net.Conn) {
	for _, c := range conns {
		var b [1]byte
		if _, err := c.Read(b[:]); err != nil {
			t.Fatal(err)
		}
	}
}
