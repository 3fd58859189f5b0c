//go:build linux

package gatenet_test

// Helpers shared by the idle-connection tests (idle_mem_test.go) and the
// many-connection benchmarks (tcpsock_bench_test.go): the descriptor limit,
// and loopback listeners that can hold thousands of connections in their
// accept queues. (The idle tests' holding and memory snapshots are
// internal/benchharness.HoldIdle's.)

import (
	"context"
	"fmt"
	"net"
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
			lc.SetMultipathTCP(false)
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
