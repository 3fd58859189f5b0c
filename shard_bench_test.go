//go:build linux

package gatenet_test

// Benchmarks with many connections (issue 6):
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

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

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
