//go:build linux

package gatenet_test

// Helpers shared by the idle-connection tests (idle_mem_test.go) and the
// many-connection benchmarks (shard_bench_test.go): the descriptor limit,
// memory snapshots, and loopback listeners that can hold thousands of
// connections in their accept queues.

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/pollfd"
)

// raiseNoFile makes sure the process may hold need descriptors: it raises
// the soft RLIMIT_NOFILE (never above the hard limit) and restores it when
// tb ends. It skips tb if the hard limit is too low.
func raiseNoFile(tb testing.TB, need uint64) {
	tb.Helper()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		tb.Skipf("RLIMIT_NOFILE hard limit %d < %d descriptors needed", lim.Max, need)
	}
	old := lim
	lim.Cur = need
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		tb.Fatalf("setrlimit(%d): %v", need, err)
	}
	tb.Cleanup(func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			tb.Errorf("restoring RLIMIT_NOFILE: %v", err)
		}
	})
}

// memSnapshot is what the idle-memory test compares before and after.
type memSnapshot struct {
	heapInuse  int64 // runtime.MemStats.HeapInuse
	stackInuse int64 // runtime.MemStats.StackInuse
	rss        int64 // resident pages × page size (/proc/self/statm)
}

// takeMemSnapshot collects garbage, returns free pages to the OS (so that
// RSS counts live memory, not pages a previous phase left behind) and
// reads the counters.
func takeMemSnapshot(tb testing.TB) memSnapshot {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory() // another GC, then scavenge everything free
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSnapshot{
		heapInuse:  int64(ms.HeapInuse),
		stackInuse: int64(ms.StackInuse),
		rss:        readRSS(tb),
	}
}

// readRSS is the resident set size: statm's second field, in pages.
func readRSS(tb testing.TB) int64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Fatalf("reading /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		tb.Fatalf("/proc/self/statm: %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		tb.Fatalf("/proc/self/statm: %v", err)
	}
	return pages * int64(os.Getpagesize())
}

// perListener is how many connections one listener is asked to hold in
// its accept queue: well under net.core.somaxconn's default of 4096 (both
// libraries listen with that backlog).
const perListener = 2000

// loopbackListeners opens enough listeners on 127.0.0.1 for n pending
// connections, with net (MPTCP off, as the other benchmarks) or with
// gatenet on poller p (nil: the default poller).
func loopbackListeners(useGatenet bool, p *pollfd.Poller, n int) ([]net.Listener, error) {
	var lns []net.Listener
	for range (n + perListener - 1) / perListener {
		var (
			ln  net.Listener
			err error
		)
		if useGatenet {
			lc := gatenet.ListenConfig{Poller: p}
			ln, err = lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
		} else {
			var lc net.ListenConfig
			lc.SetMultipathTCP(false)
			ln, err = lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
		}
		if err != nil {
			closeAll(lns)
			return nil, err
		}
		lns = append(lns, ln)
	}
	return lns, nil
}

// dialShares dials n connections spread over lns (listener i gets
// connections [i*perListener, (i+1)*perListener)), with dial, appending
// them to conns. On loopback each handshake completes inside connect, so
// the connections wait in the accept queues.
func dialShares(lns []net.Listener, n int, dial func(addr string) (net.Conn, error), conns []net.Conn) ([]net.Conn, error) {
	for i := range n {
		c, err := dial(lns[i/perListener].Addr().String())
		if err != nil {
			return conns, fmt.Errorf("dial %d of %d: %w", i, n, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// closeAll closes every element, ignoring nils and errors.
func closeAll[C interface{ Close() error }](cs []C) {
	for _, c := range cs {
		if any(c) != nil {
			c.Close()
		}
	}
}
