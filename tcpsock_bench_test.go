//go:build linux

package gatenet_test

// Benchmarks that put gatenet's TCP sockets next to net's in the same run,
// over loopback with both ends from the same library: ping-pong (the wait
// path, docs/DESIGN.md "The hop, and why latency is the hard part"), bulk
// transfer (kernel-bound), and connection setup. The gatenet sub-benchmarks
// use the default poller, so GATENET_POLLER picks the strategy:
//
//	GATENET_POLLER=nested+harvest go test -run XXX -bench TCP .
//
// Both listeners are made with MPTCP off (by default both libraries'
// listeners are MPTCP where the kernel has it), so both sides run plain TCP.
//
// cmd/sockbench runs the same workloads as interleaved rounds in fresh
// processes under every strategy, which is the fairer comparison on a noisy
// machine.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// tcpStack is one library's TCP API: listen on an ephemeral loopback port,
// dial an address.
type tcpStack struct {
	name   string
	listen func() (net.Listener, error)
	dial   func(addr string) (net.Conn, error)
}

func tcpStacks() []tcpStack {
	var lc net.ListenConfig
	lc.SetMultipathTCP(false)
	var glc gatenet.ListenConfig
	glc.SetMultipathTCP(false)
	return []tcpStack{
		{
			name:   "net",
			listen: func() (net.Listener, error) { return lc.Listen(context.Background(), "tcp4", "127.0.0.1:0") },
			dial:   func(addr string) (net.Conn, error) { return net.Dial("tcp4", addr) },
		},
		{
			name:   "gatenet",
			listen: func() (net.Listener, error) { return glc.Listen(context.Background(), "tcp4", "127.0.0.1:0") },
			dial:   func(addr string) (net.Conn, error) { return gatenet.Dial("tcp4", addr) },
		},
	}
}

// tcpPair returns a dialled connection and its accepted peer; both are
// closed when b ends (a benchmark that closed them already gets an ignored
// error).
func tcpPair(b *testing.B, s tcpStack) (c, a net.Conn) {
	b.Helper()
	ln, err := s.listen()
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	// On loopback the handshake completes in connect: the connection
	// waits in the backlog and Accept finds it there.
	c, err = s.dial(ln.Addr().String())
	if err != nil {
		b.Fatalf("dial: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	a, err = ln.Accept()
	if err != nil {
		b.Fatalf("accept: %v", err)
	}
	b.Cleanup(func() { a.Close() })
	return c, a
}

// BenchmarkTCPPingPong: the loop writes 64 bytes on a connection, an echo
// goroutine on the accepted end reads them and writes them back, the loop
// reads them back. One iteration is one round trip.
func BenchmarkTCPPingPong(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchTCPPingPong(b, s) })
	}
}

const tcpPingSize = 64

func benchTCPPingPong(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	c, a := tcpPair(b, s)

	echoDone := benchharness.Echo(a, a, tcpPingSize) // ends when c closes
	defer a.Close()
	benchRoundTrips(b, c, c, tcpPingSize, echoDone)
}

// BenchmarkTCPPingPongFaulted is BenchmarkTCPPingPong with a fault
// attached to both of gatenet's ends that never changes a call (a slicer
// of 1 MiB pieces on 64-byte messages): the cost of the fault layer's
// decision, one per system call, against net's unfaulted round trip.
func BenchmarkTCPPingPongFaulted(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) {
			testutil.CheckLeaks(b)
			c, a := tcpPair(b, s)
			if s.name == "gatenet" {
				f := faults.New(1, faults.Slicer{Min: 1 << 20, Max: 1 << 20})
				for _, x := range []net.Conn{c, a} {
					if err := gatenet.InjectFaults(x.(gatenet.Pollable), f); err != nil {
						b.Fatal(err)
					}
				}
			}
			echoDone := benchharness.Echo(a, a, tcpPingSize)
			defer a.Close()
			benchRoundTrips(b, c, c, tcpPingSize, echoDone)
		})
	}
}

// BenchmarkTCPBulk streams 128 KiB writes through one connection to a
// reader goroutine that discards them.
func BenchmarkTCPBulk(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchTCPBulk(b, s) })
	}
}

const tcpBulkChunk = 128 << 10

func benchTCPBulk(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	c, a := tcpPair(b, s)

	readDone := benchharness.Drain(a, tcpBulkChunk)
	defer a.Close()
	writeChunks(b, c, tcpBulkChunk)
	closeAndCheckDrained(b, c, readDone, int64(b.N)*tcpBulkChunk) // the tail still in the socket buffers counts
}

// BenchmarkTCPAccept: one iteration dials, an acceptor goroutine accepts
// and closes, and the dialler reads EOF and closes. Waiting for EOF keeps
// the two in step and leaves the TIME_WAIT on the server's side.
func BenchmarkTCPAccept(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchTCPAccept(b, s) })
	}
}

func benchTCPAccept(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	ln, err := s.listen()
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	b.Cleanup(func() { ln.Close() })
	addr := ln.Addr().String()

	acceptDone := benchharness.AcceptAndClose(ln) // until the benchmark is over

	var buf [1]byte
	benchPerOp(b, "conns/s", "cpu-ns/conn", func() {
		c, err := s.dial(addr)
		if err != nil {
			b.Fatalf("dial: %v", err) // the cleanup's close ends the acceptor
		}
		n, err := c.Read(buf[:])
		c.Close()
		if n != 0 || err != io.EOF {
			b.Fatalf("read: got %d, %v; want EOF", n, err)
		}
	})

	if err := ln.Close(); err != nil {
		b.Errorf("closing the listener: %v", err)
	}
	res := <-acceptDone
	if res.Err != nil {
		b.Errorf("acceptor: %v", res.Err)
	}
	if res.N != int64(b.N) {
		b.Errorf("accepted %d connections, dialled %d", res.N, b.N)
	}
}

// The benchmarks with many connections:
//
//   - BenchmarkIdleRegisteredPingPong: 64-byte ping-pong on one gatenet
//     connection with no other connection registered, and with 5,000 idle
//     connections (both ends gatenet: 10,000 idle descriptors) registered
//     with the same (default) poller. Waiting is O(ready), so the two
//     should match: the target is idle=5000 ≥ 0.95 × idle=0 in rt/s.
//   - BenchmarkEchoMany: 1,000 connections, each with a client goroutine
//     doing 64-byte ping-pong and a server goroutine echoing, all at once;
//     msg/s counts round trips (one 64-byte message and its echo). net,
//     gatenet on the default poller, and gatenet on a poller with 1 and
//     with 2 shards (pollfd.Options.Shards). The target is gatenet ≥ 1.1 ×
//     net with the best shard setting.
//
// The connections are set up once per benchmark run, not once per b.N
// round, and everything is closed (and checked for leaks) at the end.
//
//	go test -run XXX -bench 'IdleRegistered|EchoMany' -benchtime 2s -count 3 .

// idleRegistered is how many idle connections BenchmarkIdleRegisteredPingPong
// registers beside the one it measures.
const idleRegistered = 5000

func BenchmarkIdleRegisteredPingPong(b *testing.B) {
	testutil.CheckLeaks(b)
	raiseNoFile(b, 2*idleRegistered+256)
	var gn tcpStack
	for _, s := range tcpStacks() {
		if s.name == "gatenet" {
			gn = s
		}
	}
	b.Run("idle=0", func(b *testing.B) { benchTCPPingPong(b, gn) })

	// 5,000 idle pairs on the default poller, the one gn's pair uses.
	before := pollfd.Default().Stats().Registered
	lns, err := loopbackListeners(true, nil, idleRegistered)
	if err != nil {
		b.Fatalf("listen: %v", err)
	}
	var clients, servers []net.Conn
	defer func() {
		closeAll(clients)
		closeAll(servers)
		closeAll(lns)
	}()
	clients, err = dialShares(lns, idleRegistered, func(addr string) (net.Conn, error) {
		return gatenet.Dial("tcp4", addr)
	}, clients)
	if err != nil {
		b.Fatal(err)
	}
	for i := range idleRegistered {
		c, err := lns[i/perListener].Accept()
		if err != nil {
			b.Fatalf("accept %d: %v", i, err)
		}
		servers = append(servers, c)
	}
	closeAll(lns)
	lns = nil
	if got := pollfd.Default().Stats().Registered - before; got != 2*idleRegistered {
		b.Fatalf("%d more descriptors registered, want %d", got, 2*idleRegistered)
	}
	events0 := pollfd.Default().Stats().Events
	b.Run(fmt.Sprintf("idle=%d", idleRegistered), func(b *testing.B) { benchTCPPingPong(b, gn) })
	b.Logf("registered during idle=%d: %d idle + the pair; events delivered meanwhile: %d",
		idleRegistered, 2*idleRegistered, pollfd.Default().Stats().Events-events0)
}

// echoConns is the number of connections BenchmarkEchoMany runs at once.
const echoConns = 1000

// echoSetup is one library (and poller) configuration for BenchmarkEchoMany.
type echoSetup struct {
	name    string
	useGnet bool // gatenet (else net) on both ends
	shards  int  // > 0: on a new nested+harvest poller with this many shards
	newDial func(p *pollfd.Poller) func(addr string) (net.Conn, error)
}

func echoSetups() []echoSetup {
	netDial := func(*pollfd.Poller) func(string) (net.Conn, error) {
		return func(addr string) (net.Conn, error) { return net.Dial("tcp4", addr) }
	}
	gnDial := func(p *pollfd.Poller) func(string) (net.Conn, error) {
		d := gatenet.Dialer{Poller: p}
		return func(addr string) (net.Conn, error) { return d.Dial("tcp4", addr) }
	}
	return []echoSetup{
		{name: "net", newDial: netDial},
		{name: "gatenet", useGnet: true, newDial: gnDial},
		{name: "gatenet-shards=1", useGnet: true, shards: 1, newDial: gnDial},
		{name: "gatenet-shards=2", useGnet: true, shards: 2, newDial: gnDial},
	}
}

func BenchmarkEchoMany(b *testing.B) {
	testutil.CheckLeaks(b)
	raiseNoFile(b, 2*echoConns+256)
	for _, s := range echoSetups() {
		// The pool is opened by the first round of the sub-benchmark
		// (so a -bench filter that skips it opens nothing) and kept for
		// its later rounds; it is closed when the sub-benchmark is done.
		var pool *echoPool
		b.Run(s.name, func(b *testing.B) {
			if pool == nil {
				var err error
				if pool, err = openEchoPool(s, echoConns); err != nil {
					b.Fatal(err)
				}
			}
			pool.run(b)
		})
		if pool != nil {
			if err := pool.close(); err != nil {
				b.Errorf("%s: %v", s.name, err)
			}
		}
	}
}

// echoPool is n connected pairs, each server end with an echo goroutine.
type echoPool struct {
	poller  *pollfd.Poller // nil: net, or gatenet's default poller
	clients []net.Conn
	servers []net.Conn
	echoes  sync.WaitGroup
	echoErr atomic.Pointer[error]
}

func openEchoPool(s echoSetup, n int) (_ *echoPool, err error) {
	p := &echoPool{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if s.shards > 0 {
		p.poller, err = pollfd.New(pollfd.Options{Strategy: pollfd.Nested, Harvest: true, Shards: s.shards})
		if err != nil {
			return nil, err
		}
	}
	lns, err := loopbackListeners(s.useGnet, p.poller, n)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	defer closeAll(lns)
	p.clients, err = dialShares(lns, n, s.newDial(p.poller), make([]net.Conn, 0, n))
	if err != nil {
		return nil, err
	}
	for i := range n {
		c, err := lns[i/perListener].Accept()
		if err != nil {
			return nil, fmt.Errorf("accept %d: %w", i, err)
		}
		p.servers = append(p.servers, c)
		p.echoes.Add(1)
		go p.echo(c)
	}
	return p, nil
}

// echo sends back every 64-byte message until the client closes.
func (p *echoPool) echo(c net.Conn) {
	defer p.echoes.Done()
	buf := make([]byte, tcpPingSize)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				keepFirstErr(&p.echoErr, err)
			}
			return
		}
		if _, err := c.Write(buf); err != nil {
			keepFirstErr(&p.echoErr, err)
			return
		}
	}
}

// run makes b.N round trips in all, spread over every connection at once:
// a goroutine per client conn takes round trips from a shared count.
func (p *echoPool) run(b *testing.B) {
	var left atomic.Int64
	left.Store(int64(b.N))
	start := make(chan struct{})
	var clients sync.WaitGroup
	var failed atomic.Pointer[error]
	for _, c := range p.clients {
		clients.Add(1)
		go func() {
			defer clients.Done()
			msg := make([]byte, tcpPingSize)
			reply := make([]byte, tcpPingSize)
			<-start
			for left.Add(-1) >= 0 {
				if _, err := c.Write(msg); err != nil {
					keepFirstErr(&failed, err)
					return
				}
				if _, err := io.ReadFull(c, reply); err != nil {
					keepFirstErr(&failed, err)
					return
				}
			}
		}()
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos(b)
	close(start)
	clients.Wait()
	cpu1 := cpuNanos(b)
	b.StopTimer()
	if err := failed.Load(); err != nil {
		b.Fatalf("client: %v", *err)
	}
	if err := p.echoErr.Load(); err != nil {
		b.Fatalf("echo: %v", *err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msg/s")
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/msg")
}

// keepFirstErr stores err in first unless an error is there already. Taking
// err by value keeps the callers' err variables on the stack: &err in the
// loop itself would allocate one per round trip.
func keepFirstErr(first *atomic.Pointer[error], err error) {
	first.CompareAndSwap(nil, &err)
}

// close closes every conn (ending the echo goroutines), then the poller.
func (p *echoPool) close() error {
	var errs []error
	for _, c := range p.clients {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	p.echoes.Wait() // each sees EOF
	for _, c := range p.servers {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.poller != nil {
		if err := p.poller.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the poller: %w", err))
		}
	}
	if err := p.echoErr.Load(); err != nil {
		errs = append(errs, *err)
	}
	return errors.Join(errs...)
}
