//go:build linux

package gatenet_test

// What it costs a server to hold idle connections (issue 6): 8,000 idle
// loopback TCP connections, server side measured, held in each of these
// ways:
//
//	net-read-4k         net: a goroutine per conn blocked in Read with a
//	                    4 KiB buffer (the usual server)
//	net-peek            net's best buffer-less form: a goroutine per conn
//	                    parked in SyscallConn().Read with a
//	                    recv(MSG_PEEK|MSG_DONTWAIT) probe
//	gatenet-waitread    gatenet: a goroutine per conn parked in
//	                    WaitRead(context.Background()), no buffer
//	gatenet-waitread-ctx the same with a cancellable (server) context,
//	                    whose wait is a two-way select
//	gatenet-readyqueue  gatenet: every conn in one ReadyQueue, no
//	                    goroutine and no buffer per conn
//
// For each: the client conns are dialled first (net, in batches of at
// most perListener per listener, so they wait in the accept queues), the
// baseline is taken, then the server accepts them all and holds them the
// pattern's way, and the second snapshot is taken. The difference divided
// by the count is the per-connection holding cost: the accepted conn with
// everything the library allocates for it, plus the pattern's goroutine,
// stack and buffer. Heap is HeapInuse+StackInuse after a GC; RSS is
// /proc/self/statm's resident pages, after returning free pages to the OS
// at both snapshots. Then every client writes one byte, and every held
// conn must deliver it (so the holding is real), and everything is closed
// with the descriptor count back to where it was.
//
// Each pattern runs in a fresh process started from this test binary
// (-test.run=^TestIdleMemory$ with GATENET_IDLE_CHILD set), one after the
// other. In one process the later patterns would be subsidised by the
// earlier ones: the runtime never frees a goroutine's g (it keeps dead
// ones for reuse), nor net's pollDescs, and heap spans freed by one
// pattern are reused by the next. GATENET_IDLE_INPROC=1 runs them all in
// this process instead, to see that effect.
//
// It is a measurement: it fails only when a pattern costs more than
// idleSanityBound per connection (a leak), and logs whether the issue's
// targets are met. Run it with
//
//	GATENET_IDLE=1 go test -count=1 -run TestIdleMemory -v .
//
// GATENET_IDLE_CONNS changes the count; GATENET_IDLE_PROFILE=1 also logs,
// per pattern, the allocation sites live per connection (a heap profile
// at MemProfileRate 1 from the baseline on; it adds a little RSS, and its
// deeper allocation stacks can double goroutine stacks, so take the
// figures from a run without it). By default each holding goroutine
// blocks straight from its entry function, the shallowest possible;
// GATENET_IDLE_DEPTH=k puts k frames of about 100 bytes above the
// blocking call, as a server's handler code would: a goroutine whose
// deepest excursion passes the 2 KiB starting stack's limit keeps a 4 KiB
// stack, which shows how much headroom each pattern leaves.
// TestIdlePatterns runs the same patterns on a few hundred connections,
// without measuring, so that -race and the leak checks cover them.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

const (
	idleDefaultConns = 8000
	idleSanityBound  = 64 << 10 // bytes per conn; above this something leaks
	idleWakeByte     = 'x'
)

// idlePattern is one way of holding idle server conns.
type idlePattern struct {
	name    string
	label   string // for the table
	gatenet bool   // the server side is gatenet's (else net's)
	target  int64  // the target in bytes per conn (0: none)
	// hold starts holding the accepted conn c.
	hold func(h *idleHold, c net.Conn) error
	// deliver runs after every client wrote its byte and returns once
	// every held conn has delivered it (nil for goroutine patterns, whose
	// goroutines report to h themselves).
	deliver func(t *testing.T, h *idleHold, n int)
}

// idleHold is the state a pattern holds its conns with, allocated before
// the baseline.
type idleHold struct {
	ctx       context.Context
	depth     int // GATENET_IDLE_DEPTH
	q         *gatenet.ReadyQueue
	wg        sync.WaitGroup
	parked    atomic.Int64 // goroutines about to park
	delivered atomic.Int64 // conns that delivered their byte
	failures  atomic.Int64
	errMu     sync.Mutex
	firstErr  error
}

func (h *idleHold) fail(err error) {
	h.failures.Add(1)
	h.errMu.Lock()
	if h.firstErr == nil {
		h.firstErr = err
	}
	h.errMu.Unlock()
}

// readOne reads the byte the client wrote after the conn reported ready.
func (h *idleHold) readOne(c net.Conn) {
	buf := make([]byte, 2)
	n, err := c.Read(buf)
	if err != nil || n != 1 || buf[0] != idleWakeByte {
		h.fail(fmt.Errorf("read after ready: n=%d %q err=%v", n, buf[:n], err))
		return
	}
	h.delivered.Add(1)
}

// peekProbe is net's buffer-less readiness probe: recv(MSG_PEEK|
// MSG_DONTWAIT) of one byte into the stack. It reports done on data, end
// of stream or an error (the Read that follows sees which), and "wait" on
// EAGAIN. A plain function, so passing it allocates no closure.
func peekProbe(fd uintptr) bool {
	var b [1]byte
	for {
		_, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
			unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		return errno != unix.EAGAIN
	}
}

type waitReader interface {
	WaitRead(context.Context) error
}

// idleBody is what a holding goroutine runs: park until c is readable,
// then deliver, then h.wg.Done. A plain function, not a closure, so
// choosing it allocates nothing.
type idleBody func(h *idleHold, c net.Conn)

// goHold holds c with a goroutine running body: as the goroutine's entry
// (the shallowest a caller can be), or GATENET_IDLE_DEPTH frames below it,
// as a server's handler would be.
func goHold(body idleBody) func(h *idleHold, c net.Conn) error {
	return func(h *idleHold, c net.Conn) error {
		h.wg.Add(1)
		if h.depth > 0 {
			go idleDeep(h.depth, [64]byte{}, h, c, body)
		} else {
			go body(h, c)
		}
		return nil
	}
}

// idleDeep calls body k frames down, each frame about 100 bytes.
//
//go:noinline
func idleDeep(k int, pad [64]byte, h *idleHold, c net.Conn, body idleBody) byte {
	if k == 0 {
		body(h, c)
		return pad[0]
	}
	return idleDeep(k-1, pad, h, c, body) + pad[1]
}

func netRead4KBody(h *idleHold, c net.Conn) {
	defer h.wg.Done()
	buf := make([]byte, 4096)
	// A server's buffer has been read into before its conn goes idle:
	// fill it, so its page is resident as it would be (a fresh one is
	// not, until written).
	for i := range buf {
		buf[i] = 0xa5
	}
	h.parked.Add(1)
	n, err := c.Read(buf)
	if err != nil || n != 1 || buf[0] != idleWakeByte {
		h.fail(fmt.Errorf("Read: n=%d err=%v", n, err))
		return
	}
	h.delivered.Add(1)
}

func netPeekBody(h *idleHold, c net.Conn) {
	defer h.wg.Done()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		h.fail(err)
		return
	}
	h.parked.Add(1)
	if err := rc.Read(peekProbe); err != nil {
		h.fail(fmt.Errorf("RawConn.Read: %w", err))
		return
	}
	h.readOne(c)
}

func waitReadBody(h *idleHold, c net.Conn) {
	defer h.wg.Done()
	h.parked.Add(1)
	if err := c.(waitReader).WaitRead(h.ctx); err != nil {
		h.fail(fmt.Errorf("WaitRead: %w", err))
		return
	}
	h.readOne(c)
}

func idlePatterns() []idlePattern {
	return []idlePattern{
		{
			name:  "net-read-4k",
			label: "(a) net: goroutine in Read, 4 KiB buffer",
			hold:  goHold(netRead4KBody),
		},
		{
			name:  "net-peek",
			label: "(b) net: goroutine in RawConn.Read, MSG_PEEK",
			hold:  goHold(netPeekBody),
		},
		{
			name:    "gatenet-waitread",
			label:   "(c) gatenet: goroutine in WaitRead(Background)",
			gatenet: true,
			target:  3000,
			hold:    goHold(waitReadBody),
		},
		{
			name:    "gatenet-waitread-ctx",
			label:   "(c') gatenet: WaitRead(cancellable ctx)",
			gatenet: true,
			hold:    goHold(waitReadBody),
		},
		{
			name:    "gatenet-readyqueue",
			label:   "(d) gatenet: one ReadyQueue, no goroutine",
			gatenet: true,
			target:  1000,
			hold: func(h *idleHold, c net.Conn) error {
				p, ok := c.(gatenet.Pollable)
				if !ok {
					return fmt.Errorf("%T is not Pollable", c)
				}
				return h.q.Add(p)
			},
			deliver: func(t *testing.T, h *idleHold, n int) {
				seen := make(map[gatenet.Pollable]bool, n)
				for range n {
					p, err := nextWithin(h.q, time.Minute)
					if err != nil {
						h.fail(fmt.Errorf("ReadyQueue.Next after %d: %w", len(seen), err))
						return
					}
					if seen[p] {
						h.fail(errors.New("ReadyQueue reported a conn twice"))
						return
					}
					seen[p] = true
					h.readOne(p.(net.Conn))
				}
				if _, err := nextWithin(h.q, 20*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
					h.fail(fmt.Errorf("ReadyQueue.Next after every conn was served: %v", err))
				}
			},
		},
	}
}

// idleResult is one pattern's measurement (JSON from a child process).
type idleResult struct {
	Pattern    string
	Conns      int
	HeapDelta  int64 // HeapInuse + StackInuse
	StackDelta int64
	RSSDelta   int64
	Sites      []string `json:",omitempty"` // GATENET_IDLE_PROFILE
}

func (r idleResult) perConn(v int64) float64 { return float64(v) / float64(r.Conns) }

// idleOptions says how to run a pattern.
type idleOptions struct {
	conns   int
	depth   int  // extra frames above each holding goroutine's blocking call
	measure bool // take the memory snapshots
	profile bool // and the heap profile
}

// runIdlePattern holds n idle conns the pattern's way, measures them if
// measure is set, wakes each and checks it delivers, and closes
// everything. Call it in a subtest of its own: it checks for leaks when
// that subtest ends.
func runIdlePattern(t *testing.T, pat idlePattern, o idleOptions) idleResult {
	n, measure, profile := o.conns, o.measure, o.profile
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	raiseNoFile(t, uint64(2*n+256))

	lns, err := loopbackListeners(pat.gatenet, nil, n)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	clients := make([]net.Conn, 0, n)
	servers := make([]net.Conn, 0, n)
	h := &idleHold{ctx: context.Background(), q: gatenet.NewReadyQueue(), depth: o.depth}
	if pat.name == "gatenet-waitread-ctx" {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		h.ctx = ctx
		_ = ctx.Done() // the done channel is made once, lazily: not per conn
	}
	// Closing the servers ends every holding goroutine, whatever happened.
	t.Cleanup(func() {
		closeAll(servers)
		closeAll(clients)
		closeAll(lns)
		h.q.Close()
		h.wg.Wait()
	})
	clients, err = dialShares(lns, n, func(addr string) (net.Conn, error) { return net.Dial("tcp4", addr) }, clients)
	if err != nil {
		t.Fatal(err)
	}

	var before memSnapshot
	if measure {
		before = takeMemSnapshot(t)
	}
	if profile {
		runtime.MemProfileRate = 1
		defer func() { runtime.MemProfileRate = 512 * 1024 }()
	}
	goroutines0 := runtime.NumGoroutine()
	parks0 := pollfd.Default().Stats().Parks

	for i := range n {
		c, err := lns[i/perListener].Accept()
		if err != nil {
			t.Fatalf("accept %d of %d: %v", i, n, err)
		}
		servers = append(servers, c)
		if err := pat.hold(h, c); err != nil {
			t.Fatalf("holding conn %d: %v", i, err)
		}
	}
	if pat.deliver == nil {
		// Every goroutine is about to park; wait until it has.
		waitFor(t, "holding goroutines to start", func() bool { return h.parked.Load() == int64(n) })
		if pat.gatenet {
			waitFor(t, "WaitRead goroutines to park", func() bool {
				return pollfd.Default().Stats().Parks-parks0 >= uint64(n)
			})
		} else {
			time.Sleep(200 * time.Millisecond)
		}
		if got := runtime.NumGoroutine() - goroutines0; got != n {
			t.Fatalf("%d goroutines more than before, want %d", got, n)
		}
	} else if got := runtime.NumGoroutine() - goroutines0; got != 0 {
		t.Fatalf("%d goroutines more than before, want none", got)
	}
	if d := h.delivered.Load() + h.failures.Load(); d != 0 || h.q.Len() != 0 {
		t.Fatalf("%d conns reported ready (queue: %d) before any data was sent", d, h.q.Len())
	}

	res := idleResult{Pattern: pat.name, Conns: n}
	if measure {
		after := takeMemSnapshot(t)
		res.HeapDelta = (after.heapInuse + after.stackInuse) - (before.heapInuse + before.stackInuse)
		res.StackDelta = after.stackInuse - before.stackInuse
		res.RSSDelta = after.rss - before.rss
		t.Logf("%s: heap %+d B (stack %+d B), RSS %+d B over %d conns: %.0f heap B/conn, %.0f RSS B/conn",
			pat.name, res.HeapDelta, res.StackDelta, res.RSSDelta, n,
			res.perConn(res.HeapDelta), res.perConn(res.RSSDelta))
	}
	if profile {
		res.Sites = liveAllocSites(n)
		runtime.MemProfileRate = 512 * 1024
	}

	// Wake every conn: each must deliver its byte, once.
	one := []byte{idleWakeByte}
	for i, c := range clients {
		if _, err := c.Write(one); err != nil {
			t.Fatalf("client %d write: %v", i, err)
		}
	}
	if pat.deliver != nil {
		pat.deliver(t, h, n)
	} else {
		waitFor(t, "every conn to deliver", func() bool { return h.delivered.Load()+h.failures.Load() == int64(n) })
	}
	h.wg.Wait()
	if f := h.failures.Load(); f != 0 {
		t.Fatalf("%d of %d conns failed to deliver; first: %v", f, n, h.firstErr)
	}
	if d := h.delivered.Load(); d != int64(n) {
		t.Fatalf("%d of %d conns delivered", d, n)
	}

	var closers []io.Closer
	for _, c := range servers {
		closers = append(closers, c)
	}
	for _, c := range clients {
		closers = append(closers, c)
	}
	for _, ln := range lns {
		closers = append(closers, ln)
	}
	for _, c := range closers {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	return res
}

// waitFor polls cond for up to a minute (a hang detector, not a timing
// check).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for limit := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(limit) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

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

func allocSiteKey(stk []uintptr) string {
	frames := runtime.CallersFrames(stk)
	var alloc string
	var callers []string
	for {
		f, more := frames.Next()
		name := strings.TrimPrefix(f.Function, "github.com/gatenet/gatenet/")
		isRuntime := strings.HasPrefix(name, "runtime.") || strings.HasPrefix(name, "internal/")
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

// TestIdleMemory is the measurement (see the top of the file).
func TestIdleMemory(t *testing.T) {
	if testing.Short() || os.Getenv("GATENET_IDLE") != "1" {
		t.Skip("a measurement: set GATENET_IDLE=1 (and not -short) to run it")
	}
	n := idleDefaultConns
	if s := os.Getenv("GATENET_IDLE_CONNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("GATENET_IDLE_CONNS=%q", s)
		}
		n = v
	}
	opts := idleOptions{conns: n, measure: true, profile: os.Getenv("GATENET_IDLE_PROFILE") == "1"}
	if s := os.Getenv("GATENET_IDLE_DEPTH"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			t.Fatalf("GATENET_IDLE_DEPTH=%q", s)
		}
		opts.depth = v
	}
	profile := opts.profile
	pats := idlePatterns()

	// A child: measure one pattern and write the result where the parent
	// said.
	if name := os.Getenv("GATENET_IDLE_CHILD"); name != "" {
		i := slices.IndexFunc(pats, func(p idlePattern) bool { return p.name == name })
		if i < 0 {
			t.Fatalf("GATENET_IDLE_CHILD=%q: no such pattern", name)
		}
		var res idleResult
		t.Run(name, func(t *testing.T) { res = runIdlePattern(t, pats[i], opts) })
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(os.Getenv("GATENET_IDLE_OUT"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}

	testutil.CheckLeaks(t)
	inproc := os.Getenv("GATENET_IDLE_INPROC") == "1"
	var results []idleResult
	for _, pat := range pats {
		var res idleResult
		var ok bool
		if inproc {
			ok = t.Run(pat.name, func(t *testing.T) { res = runIdlePattern(t, pat, opts) })
		} else {
			res, ok = runIdleChild(t, pat.name)
		}
		if !ok {
			continue
		}
		results = append(results, res)
	}

	var tbl strings.Builder
	mode := "each pattern in a fresh process"
	if inproc {
		mode = "all patterns in this process, one after the other"
	}
	fmt.Fprintf(&tbl, "idle connections held server-side: %d per pattern, %s, GOMAXPROCS=%d, %s\n",
		n, mode, runtime.GOMAXPROCS(0), runtime.Version())
	if opts.depth > 0 {
		fmt.Fprintf(&tbl, "goroutines block %d frames (about %d bytes) below their entry (GATENET_IDLE_DEPTH)\n",
			opts.depth, opts.depth*100)
	}
	fmt.Fprintf(&tbl, "%-48s %12s %12s %12s\n", "pattern", "heap B/conn", "(stack)", "RSS B/conn")
	for _, r := range results {
		label := r.Pattern
		for _, p := range pats {
			if p.name == r.Pattern {
				label = p.label
			}
		}
		fmt.Fprintf(&tbl, "%-48s %12.0f %12.0f %12.0f\n", label,
			r.perConn(r.HeapDelta), r.perConn(r.StackDelta), r.perConn(r.RSSDelta))
	}
	if profile {
		fmt.Fprintf(&tbl, "(GATENET_IDLE_PROFILE: profiling every allocation deepens the allocating stacks,\n"+
			" which can grow goroutine stacks to 4 KiB; take the figures from a run without it)\n")
	}
	t.Log("\n" + tbl.String())
	for _, r := range results {
		if len(r.Sites) > 0 {
			t.Logf("%s: live allocations per conn (heap profile):\n  %s", r.Pattern, strings.Join(r.Sites, "\n  "))
		}
	}

	for _, r := range results {
		heap, rss := r.perConn(r.HeapDelta), r.perConn(r.RSSDelta)
		if heap > idleSanityBound || rss > idleSanityBound {
			t.Errorf("%s: %.0f heap B/conn, %.0f RSS B/conn: over the %d B/conn sanity bound (a leak?)",
				r.Pattern, heap, rss, idleSanityBound)
		}
		for _, p := range pats {
			if p.name != r.Pattern || p.target == 0 {
				continue
			}
			verdict := func(v float64) string {
				if v <= float64(p.target) {
					return "met"
				}
				return "NOT met"
			}
			t.Logf("target %s ≤ %d B/conn: RSS %.0f (%s), heap %.0f (%s)",
				r.Pattern, p.target, rss, verdict(rss), heap, verdict(heap))
		}
	}
}

// runIdleChild runs one pattern in a fresh process of this test binary and
// returns its result.
func runIdleChild(t *testing.T, name string) (idleResult, bool) {
	t.Helper()
	out := t.TempDir() + "/result.json"
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleMemory$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(),
		"GATENET_IDLE=1",
		"GATENET_IDLE_CHILD="+name,
		"GATENET_IDLE_OUT="+out,
		"GATENET_IDLE_INPROC=")
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("pattern %s: child process: %v\n%s", name, err, output)
		return idleResult{}, false
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Errorf("pattern %s: no result (%v)\n%s", name, err, output)
		return idleResult{}, false
	}
	var res idleResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Errorf("pattern %s: result: %v", name, err)
		return idleResult{}, false
	}
	return res, true
}

// TestIdlePatterns runs every holding pattern on a few hundred conns,
// without measuring: each conn delivers its byte once, and nothing leaks.
func TestIdlePatterns(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 100
	}
	for _, pat := range idlePatterns() {
		t.Run(pat.name, func(t *testing.T) { runIdlePattern(t, pat, idleOptions{conns: n}) })
		if pat.deliver == nil {
			t.Run(pat.name+"/deep", func(t *testing.T) { runIdlePattern(t, pat, idleOptions{conns: n / 4, depth: 4}) })
		}
	}
}
