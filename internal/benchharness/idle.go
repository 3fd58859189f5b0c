//go:build linux

package benchharness

// Holding idle connections server-side, measured (issue 6): the patterns
// that cmd/gatebench's idle workload and the root package's
// idle_mem_test.go compare, as a function a command or a test can run in
// a child process of its own.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/pollfd"
)

// The idle patterns: how a server holds a connection until it is readable.
const (
	IdlePeek        = "peek"         // net: a goroutine parked in SyscallConn().Read with a MSG_PEEK probe, no buffer
	IdleRead4K      = "read4k"       // net: a goroutine blocked in Read with a 4 KiB buffer (the usual server)
	IdleWaitRead    = "waitread"     // gatenet: a goroutine parked in WaitRead(context.Background()), no buffer
	IdleWaitReadCtx = "waitread-ctx" // gatenet: the same with a cancellable context, whose wait is a two-way select
	IdleQueue       = "queue"        // gatenet: every conn in one ReadyQueue, no goroutine and no buffer
)

// IdleGatenet reports whether pattern holds gatenet's conns (else net's).
func IdleGatenet(pattern string) bool {
	return pattern == IdleWaitRead || pattern == IdleWaitReadCtx || pattern == IdleQueue
}

// IdleOptions are HoldIdle's optional settings.
type IdleOptions struct {
	// Depth puts Depth frames of about 100 bytes above each holding
	// goroutine's blocking call, as a server's handler code would; by
	// default the goroutines block straight from their entry function,
	// the shallowest possible.
	Depth int
	// Profile records every allocation from the baseline on
	// (MemProfileRate 1) and summarises the sites still live per conn
	// in IdleResult.Sites. It deepens the allocating stacks, which can
	// grow goroutine stacks: take the figures from a run without it.
	Profile bool
}

// IdleResult is what holding n idle connections cost: the differences of
// HeapInuse+StackInuse (Heap), StackInuse (Stack) and the resident set
// (RSS), after a GC, between before the server accepted them and once
// every one was held.
type IdleResult struct {
	Conns              int
	Heap, Stack, RSS   int64
	Elapsed            time.Duration // the whole run: dial, accept, hold, wake, close
	HeapPerConn        float64
	StackPerConn       float64
	RSSPerConn         float64
	DeliveredAfterWake int
	Sites              []string // IdleOptions.Profile: live allocation sites, per conn
}

const idlePerListener = 2000 // pending conns per listener: under somaxconn's 4096

// HoldIdle holds n idle loopback connections on s's server side the
// pattern's way and measures them; then each client writes one byte, and
// every held conn must deliver it, once (so the holding is real), and
// everything is closed. The clients are net's, dialled before the first
// snapshot, so only the server side counts: the accepted conn with
// everything its library allocates for it, plus the pattern's goroutine,
// stack and buffer. Run it in a fresh process: in one with a history the
// runtime's reuse of dead goroutines and freed spans subsidises it. The
// process must allow 2n+ descriptors.
func HoldIdle(s Stack, pattern string, n int, o IdleOptions) (IdleResult, error) {
	gn := s.Name == "gatenet"
	if gn != IdleGatenet(pattern) {
		return IdleResult{}, fmt.Errorf("pattern %q is not for %s", pattern, s.Name)
	}
	t0 := time.Now()
	var lns []net.Listener
	var clients, servers []net.Conn
	h := &idleHold{ctx: context.Background(), depth: o.Depth, q: gatenet.NewReadyQueue()}
	if pattern == IdleWaitReadCtx {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.ctx = ctx
		_ = ctx.Done() // the done channel is made once, lazily: not per conn
	}
	// Closing the servers ends every holding goroutine, whatever happened.
	defer func() {
		closeConns(servers)
		closeConns(clients)
		for _, ln := range lns {
			ln.Close()
		}
		h.q.Close()
		h.wg.Wait()
	}()
	for range (n + idlePerListener - 1) / idlePerListener {
		ln, err := s.Listen()
		if err != nil {
			return IdleResult{}, err
		}
		lns = append(lns, ln)
	}
	clients = make([]net.Conn, 0, n)
	servers = make([]net.Conn, 0, n)
	for i := range n {
		c, err := net.Dial("tcp4", lns[i/idlePerListener].Addr().String())
		if err != nil {
			return IdleResult{}, fmt.Errorf("dial %d of %d: %w", i, n, err)
		}
		clients = append(clients, c)
	}

	before := takeMem()
	if o.Profile {
		runtime.MemProfileRate = 1
		defer func() { runtime.MemProfileRate = 512 * 1024 }()
	}
	goroutines0 := heldGoroutines()
	var parks0 uint64
	if gn {
		parks0 = pollfd.Default().Stats().Parks
	}
	for i := range n {
		c, err := lns[i/idlePerListener].Accept()
		if err != nil {
			return IdleResult{}, fmt.Errorf("accept %d of %d: %w", i, n, err)
		}
		servers = append(servers, c)
		if err := h.hold(pattern, c); err != nil {
			return IdleResult{}, fmt.Errorf("holding conn %d: %w", i, err)
		}
	}
	if pattern != IdleQueue {
		// Every goroutine is about to park; wait until it has.
		if err := waitUntil("the holding goroutines to start", func() bool { return h.parked.Load() == int64(n) }); err != nil {
			return IdleResult{}, err
		}
		if gn {
			err := waitUntil("WaitRead goroutines to park", func() bool { return pollfd.Default().Stats().Parks-parks0 >= uint64(n) })
			if err != nil {
				return IdleResult{}, err
			}
		} else {
			time.Sleep(200 * time.Millisecond) // no counter to watch: let them park
		}
	}
	// One goroutine per held conn (none with the queue), once the
	// short-lived ones have gone: a context's first wait on a descriptor
	// registers it from a goroutine of its own (pollfd/ctxwait.go).
	want := n
	if pattern == IdleQueue {
		want = 0
	}
	if err := waitUntil("the goroutine count to settle", func() bool { return heldGoroutines()-goroutines0 == want }); err != nil {
		return IdleResult{}, fmt.Errorf("%d goroutines more than before, want %d: %w", heldGoroutines()-goroutines0, want, err)
	}
	if d := h.delivered.Load() + h.failures.Load(); d != 0 || h.q.Len() != 0 {
		return IdleResult{}, fmt.Errorf("%d conns reported ready (queue: %d) before any data was sent", d, h.q.Len())
	}
	after := takeMem()
	var sites []string
	if o.Profile {
		sites = liveAllocSites(n)
		runtime.MemProfileRate = 512 * 1024
	}

	// Wake every conn: each must deliver its byte, once.
	one := []byte{idleWakeByte}
	for i, c := range clients {
		if _, err := c.Write(one); err != nil {
			return IdleResult{}, fmt.Errorf("client %d write: %w", i, err)
		}
	}
	if pattern == IdleQueue {
		h.deliverQueue(n)
	} else if err := waitUntil("every conn to deliver", func() bool { return h.delivered.Load()+h.failures.Load() == int64(n) }); err != nil {
		return IdleResult{}, err
	}
	h.wg.Wait()
	if f := h.failures.Load(); f != 0 {
		return IdleResult{}, fmt.Errorf("%d of %d conns failed to deliver; first: %v", f, n, *h.firstErr.Load())
	}
	if d := h.delivered.Load(); d != int64(n) {
		return IdleResult{}, fmt.Errorf("%d of %d conns delivered", d, n)
	}
	r := IdleResult{
		Conns:              n,
		Heap:               (after.heap + after.stack) - (before.heap + before.stack),
		Stack:              after.stack - before.stack,
		RSS:                after.rss - before.rss,
		DeliveredAfterWake: int(h.delivered.Load()),
		Sites:              sites,
	}
	r.HeapPerConn = float64(r.Heap) / float64(n)
	r.StackPerConn = float64(r.Stack) / float64(n)
	r.RSSPerConn = float64(r.RSS) / float64(n)
	var errs []error
	for _, cs := range [][]net.Conn{servers, clients} {
		for _, c := range cs {
			if err := c.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, ln := range lns {
		if err := ln.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	servers, clients, lns = nil, nil, nil
	r.Elapsed = time.Since(t0)
	return r, errors.Join(errs...)
}

const idleWakeByte = 'x'

// idleHold is the state a pattern holds its conns with, allocated before
// the baseline.
type idleHold struct {
	ctx       context.Context // the WaitRead patterns'
	depth     int             // IdleOptions.Depth
	q         *gatenet.ReadyQueue
	wg        sync.WaitGroup
	parked    atomic.Int64 // goroutines about to park
	delivered atomic.Int64 // conns that delivered their byte
	failures  atomic.Int64
	firstErr  atomic.Pointer[error]
}

func (h *idleHold) fail(err error) {
	h.failures.Add(1)
	h.firstErr.CompareAndSwap(nil, &err)
}

// idleBody is what a holding goroutine runs: park until c is readable,
// then deliver, then h.wg.Done. A plain function, not a closure, so
// choosing it allocates nothing.
type idleBody func(h *idleHold, c net.Conn)

// hold starts holding the accepted conn c the pattern's way: in the
// ReadyQueue, or with a goroutine running the pattern's body as its entry
// (the shallowest a goroutine can block) or h.depth frames below it.
func (h *idleHold) hold(pattern string, c net.Conn) error {
	var body idleBody
	switch pattern {
	case IdlePeek:
		body = peekBody
	case IdleRead4K:
		body = read4KBody
	case IdleWaitRead, IdleWaitReadCtx:
		body = waitReadBody
	case IdleQueue:
		p, ok := c.(gatenet.Pollable)
		if !ok {
			return fmt.Errorf("%T is not Pollable", c)
		}
		return h.q.Add(p)
	default:
		return fmt.Errorf("unknown idle pattern %q", pattern)
	}
	h.wg.Add(1)
	if h.depth > 0 {
		go idleDeep(h.depth, [64]byte{}, h, c, body)
	} else {
		go body(h, c)
	}
	return nil
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

// deliverQueue serves the ReadyQueue once every client has written: each
// of the n conns must be reported once, and then none.
func (h *idleHold) deliverQueue(n int) {
	seen := make(map[gatenet.Pollable]bool, n)
	for range n {
		p, err := h.next(time.Minute)
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
	if _, err := h.next(20 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		h.fail(fmt.Errorf("ReadyQueue.Next after every conn was served: %v", err))
	}
}

// next is h.q.Next bounded by d (a hang detector, not a timing check).
func (h *idleHold) next(d time.Duration) (gatenet.Pollable, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return h.q.Next(ctx)
}

// readOne reads the byte the client wrote after c reported ready.
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
// MSG_DONTWAIT) of one byte into the stack; done on data, end of stream
// or an error (the Read that follows sees which), "wait" on EAGAIN. A
// plain function, so passing it allocates no closure.
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

func peekBody(h *idleHold, c net.Conn) {
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

func read4KBody(h *idleHold, c net.Conn) {
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
		h.fail(fmt.Errorf("read: n=%d err=%v", n, err))
		return
	}
	h.delivered.Add(1)
}

type waitReader interface {
	WaitRead(context.Context) error
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

type memSnapshot struct{ heap, stack, rss int64 }

// memStats is takeMem's, not on its stack: a MemStats is over 5 KiB, and
// the stacks in use at a GC set the runtime's adaptive starting stack
// size (their average), which goroutines that reuse dead ones start with.
// In a process with a history (GATENET_IDLE_INPROC) a big frame here
// would double the next pattern's stacks.
var (
	memStatsMu sync.Mutex
	memStats   runtime.MemStats
)

// takeMem collects garbage, returns free pages to the OS (so that RSS
// counts live memory, not pages a previous phase left behind) and reads
// HeapInuse, StackInuse and the RSS.
func takeMem() memSnapshot {
	runtime.GC()
	debug.FreeOSMemory() // another GC, then scavenge everything free
	memStatsMu.Lock()
	defer memStatsMu.Unlock()
	runtime.ReadMemStats(&memStats)
	return memSnapshot{int64(memStats.HeapInuse), int64(memStats.StackInuse), readRSS()}
}

// readRSS is /proc/self/statm's resident pages in bytes (0 if unreadable).
func readRSS() int64 {
	var pages, size int64
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	if _, err := fmt.Sscan(string(b), &size, &pages); err != nil {
		return 0
	}
	return pages * int64(unix.Getpagesize())
}

// waitUntil polls cond for up to a minute (a hang detector).
func waitUntil(what string, cond func() bool) error {
	for limit := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(limit) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

func closeConns(cs []net.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

// heldGoroutines counts the process's goroutines but the default poller's
// drain loops, which come and go with the descriptors of each shard
// (pollfd/drain.go): a shard's first conn starts one.
func heldGoroutines() int {
	return runtime.NumGoroutine() - int(pollfd.Default().Stats().DrainLoops)
}
