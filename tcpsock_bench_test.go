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
	"io"
	"net"
	"testing"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
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

	msg := make([]byte, tcpPingSize)
	for i := range msg {
		msg[i] = byte(i)
	}
	reply := make([]byte, tcpPingSize)

	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos(b)
	for range b.N {
		if _, err := c.Write(msg); err != nil {
			b.Fatalf("write: %v", err) // the cleanup's close ends the echo goroutine
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			b.Fatalf("read: %v", err)
		}
	}
	cpu1 := cpuNanos(b)
	b.StopTimer()

	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rt/s")
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/rt")

	if err := c.Close(); err != nil {
		b.Errorf("closing the dialled conn: %v", err)
	}
	if err := <-echoDone; err != nil {
		b.Errorf("echo: %v", err)
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

	chunk := make([]byte, tcpBulkChunk)
	b.SetBytes(tcpBulkChunk)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(chunk); err != nil {
			b.Fatalf("write: %v", err)
		}
	}
	if err := c.Close(); err != nil {
		b.Errorf("closing the writer: %v", err)
	}
	res := <-readDone // the tail still in the socket buffers counts
	b.StopTimer()
	if res.Err != nil {
		b.Errorf("reader: %v", res.Err)
	}
	if want := int64(b.N) * tcpBulkChunk; res.N != want {
		b.Errorf("reader got %d bytes, want %d", res.N, want)
	}
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

	type result struct {
		n   int
		err error
	}
	acceptDone := make(chan result, 1)
	go func() {
		var n int
		for {
			a, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil // the benchmark is over
				}
				acceptDone <- result{n, err}
				return
			}
			n++
			if err := a.Close(); err != nil {
				acceptDone <- result{n, err}
				return
			}
		}
	}()

	var buf [1]byte
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos(b)
	for range b.N {
		c, err := s.dial(addr)
		if err != nil {
			b.Fatalf("dial: %v", err) // the cleanup's close ends the acceptor
		}
		n, err := c.Read(buf[:])
		c.Close()
		if n != 0 || err != io.EOF {
			b.Fatalf("read: got %d, %v; want EOF", n, err)
		}
	}
	cpu1 := cpuNanos(b)
	b.StopTimer()

	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conns/s")
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/conn")

	if err := ln.Close(); err != nil {
		b.Errorf("closing the listener: %v", err)
	}
	res := <-acceptDone
	if res.err != nil {
		b.Errorf("acceptor: %v", res.err)
	}
	if res.n != b.N {
		b.Errorf("accepted %d connections, dialled %d", res.n, b.N)
	}
}
