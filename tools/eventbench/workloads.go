//go:build linux

package main

// The workloads. Every client is the standard library's (net.Dial over
// tcp4 to 127.0.0.1), so that only the server differs. The throughput
// workloads run the server and their clients in one child process, except
// bulk-apart, which runs them in two (apart.go); idle runs the server in
// the child and its clients in the parent.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// Sizes, as the issue gives them.
const (
	pingSize   = 64        // pingpong and echo-many messages
	bulkChunk  = 128 << 10 // bulk writes
	bulkWindow = 8         // bulk writes in flight (written, not yet echoed back)
	dialers    = 4         // accept's concurrent clients
	// defaultReadBuf is every server's read buffer unless -readbuf says
	// otherwise: what gnet and nbio read with by default (64 KiB per
	// event loop or poller).
	defaultReadBuf = 64 << 10
	echoConns      = 1000    // echo-many's default connections
	idleConns      = 10000   // idle's default connections
	maxLoopOps     = 1 << 40 // a bound on any timed loop besides its duration
	dialTimeout    = 10 * time.Second
	ioTimeout      = 30 * time.Second // a hang detector on clients' reads and writes
)

// workload is one workload: its name, what it does, and its figures.
type workload struct {
	name    string
	what    string
	metrics []metric
}

var workloads = []workload{
	{"pingpong", "64-byte echo on one connection, one round trip at a time", []metric{
		{"round trips/s", false, result.rate, benchharness.Kilo},
		{"p50 µs", true, extra("p50_us"), benchharness.Fixed(1)},
		{"p99 µs", true, extra("p99_us"), benchharness.Fixed(1)},
		{"CPU µs/round trip", true, cpuPerOp, benchharness.Fixed(1)},
	}},
	{"echo-many", "64-byte echo on 1,000 connections at once, a client goroutine each", []metric{
		{"messages/s", false, result.rate, benchharness.Kilo},
		{"p50 µs", true, extra("p50_us"), benchharness.Fixed(0)},
		{"p99 µs", true, extra("p99_us"), benchharness.Fixed(0)},
		{"CPU µs/message", true, cpuPerOp, benchharness.Fixed(1)},
	}},
	{"bulk", "128 KiB writes echoed back, 8 in flight, one connection", []metric{
		{"MB/s", false, func(r result) float64 { return float64(r.Bytes) / r.Seconds / 1e6 }, benchharness.Fixed(0)},
		{"CPU µs/MB", true, func(r result) float64 { return float64(r.CPUNanos) / 1e3 / (float64(r.Bytes) / 1e6) }, benchharness.Fixed(0)},
	}},
	{"bulk-apart", "bulk with its clients in a process of their own, apart from the server's", []metric{
		{"MB/s", false, func(r result) float64 { return float64(r.Bytes) / r.Seconds / 1e6 }, benchharness.Fixed(0)},
		{"server CPU µs/MB", true, func(r result) float64 { return float64(r.CPUNanos) / 1e3 / (float64(r.Bytes) / 1e6) }, benchharness.Fixed(0)},
		{"client CPU µs/MB", true, func(r result) float64 { return r.Extra["client_cpu_ns"] / 1e3 / (float64(r.Bytes) / 1e6) }, benchharness.Fixed(0)},
	}},
	{"accept", "4 dialers, each: dial, write 1 byte, read it back, close", []metric{
		{"connections/s", false, result.rate, benchharness.Kilo},
		{"p50 µs", true, extra("p50_us"), benchharness.Fixed(0)},
		{"p99 µs", true, extra("p99_us"), benchharness.Fixed(0)},
		{"CPU µs/connection", true, cpuPerOp, benchharness.Fixed(0)},
	}},
	{"idle", "heap+stack per idle connection the server holds (10,000 conns)", []metric{
		{"bytes/conn", true, extra("bytes_per_conn"), benchharness.Fixed(0)},
	}},
}

// cpuPerOp is the process's CPU time (server and clients, user and
// system) per operation, in microseconds.
func cpuPerOp(r result) float64 { return float64(r.CPUNanos) / 1e3 / float64(r.Ops) }

func extra(key string) func(result) float64 {
	return func(r result) float64 { return r.Extra[key] }
}

// dial is every client's dial: the standard library's, over tcp4, with
// -congestion's algorithm if one is set.
func dial(addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout, Control: func(_, _ string, c syscall.RawConn) error { return setCongestion(c) }}
	return d.Dial("tcp4", addr)
}

// isEndOfConn reports whether err is a peer's ordinary goodbye: EOF, or a
// reset or broken pipe after it closed.
func isEndOfConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// roundTrip writes msg on c and reads the echo into reply, which must
// equal it.
func roundTrip(c net.Conn, msg, reply []byte) error {
	if _, err := c.Write(msg); err != nil {
		return err
	}
	if _, err := io.ReadFull(c, reply); err != nil {
		return err
	}
	if !bytes.Equal(msg, reply) {
		return fmt.Errorf("echo %q, sent %q", reply, msg)
	}
	return nil
}

// message is a pingSize-byte message, distinct per i.
func message(i int) []byte {
	b := make([]byte, pingSize)
	for j := range b {
		b[j] = byte(i + j)
	}
	return b
}

// dialFor dials addr with a deadline that outlasts a round of duration:
// a server that stops answering fails the round rather than hanging it.
func dialFor(addr string, duration time.Duration) (net.Conn, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	if err := c.SetDeadline(time.Now().Add(duration + 2*time.Minute)); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// pingpong: one connection, 64-byte round trips; 1,000 to warm up, then
// every one timed.
func pingpong(s server, duration time.Duration) (result, error) {
	c, err := dialFor(s.Addr(), duration)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	msg, reply := message(0), make([]byte, pingSize)
	for range 1000 {
		if err := roundTrip(c, msg, reply); err != nil {
			return result{}, err
		}
	}
	var lat benchharness.Histogram
	n, m, err := runLoop(0, duration, maxLoopOps, func() error {
		t0 := time.Now()
		err := roundTrip(c, msg, reply)
		lat.Record(time.Since(t0))
		return err
	})
	elapsed, cpu := m.stop()
	if err != nil {
		return result{}, err
	}
	return result{Ops: n, Bytes: n * pingSize, Seconds: elapsed.Seconds(), CPUNanos: cpu, Extra: percentiles(&lat)}, nil
}

// echoMany: conns connections, a client goroutine each doing 64-byte
// round trips; every measured round trip timed.
func echoMany(s server, conns int, duration time.Duration) (result, error) {
	cs, err := dialMany(s.Addr(), conns)
	if err != nil {
		return result{}, err
	}
	defer closeAll(cs)
	type bufs struct{ msg, reply []byte }
	b := make([]bufs, conns)
	for i := range b {
		b[i] = bufs{message(i), make([]byte, pingSize)}
		if err := cs[i].SetDeadline(time.Now().Add(duration + 2*time.Minute)); err != nil {
			return result{}, err
		}
	}
	run, err := benchharness.RunConcurrent(conns, 10, duration, func(w int) error {
		return roundTrip(cs[w], b[w].msg, b[w].reply)
	})
	if err != nil {
		return result{}, err
	}
	r := fromConcurrent(run)
	r.Bytes = r.Ops * pingSize
	return r, nil
}

// bulk: one connection, a writer goroutine writing 128 KiB at a time and
// a reader goroutine reading the echo back, the writer at most
// bulkWindow writes ahead (so that no server has to buffer without
// bound). The rate is of bytes echoed back, counted from when the first
// 32 writes have come back.
func bulk(s server, duration time.Duration) (result, error) {
	return bulkClients(s.Addr(), duration, bulkHooks{})
}

// bulkHooks are what bulkClients calls around its measured part, with
// the load running: measuring just before the meter starts, measured
// just after it stops. bulk-apart's clients coordinate the server's
// process with them (apart.go). Nil hooks do nothing.
type bulkHooks struct {
	measuring, measured func() error
}

// bulkClients is bulk's clients, against the server at addr.
func bulkClients(addr string, duration time.Duration, hooks bulkHooks) (result, error) {
	c, err := dialFor(addr, duration)
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	chunk := make([]byte, bulkChunk)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	var (
		got    atomic.Int64 // bytes echoed back so far
		tokens = make(chan struct{}, bulkWindow)
		stop   = make(chan struct{})
		wdone  = make(chan error, 1)
		rdone  = make(chan error, 1)
	)
	go func() { // the writer
		for written := int64(0); written < maxLoopOps; written += bulkChunk {
			select {
			case tokens <- struct{}{}:
			case <-stop:
				wdone <- nil
				return
			}
			if _, err := c.Write(chunk); err != nil {
				wdone <- err
				return
			}
		}
		wdone <- nil
	}()
	go func() { // the reader
		buf := make([]byte, bulkChunk)
		var released int64
		for {
			n, err := c.Read(buf)
			total := got.Add(int64(n))
			for ; total-released >= bulkChunk; released += bulkChunk {
				<-tokens
			}
			if err != nil {
				rdone <- err
				return
			}
		}
	}()
	fail := func(err error) (result, error) {
		close(stop)
		c.Close()
		return result{}, err
	}

	const warm = 32 * bulkChunk
	if err := waitFor("the warm-up's echo", time.Minute, func() bool { return got.Load() >= warm }); err != nil {
		return fail(err)
	}
	if hooks.measuring != nil {
		if err := hooks.measuring(); err != nil {
			return fail(err)
		}
	}
	m := startMeter()
	got0 := got.Load()
	select {
	case <-time.After(duration):
	case err := <-rdone:
		return fail(fmt.Errorf("read: %w", err))
	case err := <-wdone:
		return fail(fmt.Errorf("write: %w", err))
	}
	measured := got.Load() - got0
	elapsed, cpu := m.stop()
	if hooks.measured != nil {
		if err := hooks.measured(); err != nil {
			return fail(err)
		}
	}
	close(stop)
	if err := <-wdone; err != nil {
		c.Close()
		return result{}, fmt.Errorf("write: %w", err)
	}
	// Everything written comes back: the writer wrote whole chunks, and
	// the reader released a token for each one echoed.
	if err := waitFor("the echo's tail", time.Minute, func() bool { return len(tokens) == 0 }); err != nil {
		c.Close()
		return result{}, err
	}
	c.Close()
	if err := <-rdone; !errors.Is(err, net.ErrClosed) {
		return result{}, fmt.Errorf("read: %w", err)
	}
	return result{Ops: measured / bulkChunk, Bytes: measured, Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}

// accept: dialers goroutines, each over and over: dial, write a byte,
// read it back, close. One operation is one connection, timed.
func accept(s server, dialers int, duration time.Duration) (result, error) {
	addr := s.Addr()
	run, err := benchharness.RunConcurrent(dialers, 25, duration, func(int) error {
		c, err := dial(addr)
		if err != nil {
			return err
		}
		var b [1]byte
		if err = c.SetDeadline(time.Now().Add(ioTimeout)); err == nil {
			if _, err = c.Write([]byte{'a'}); err == nil {
				_, err = io.ReadFull(c, b[:])
			}
		}
		if err == nil && b[0] != 'a' {
			err = fmt.Errorf("echo %q, sent 'a'", b[0])
		}
		return errors.Join(err, c.Close())
	})
	if err != nil {
		return result{}, err
	}
	return fromConcurrent(run), nil
}

// dialMany dials n connections to addr.
func dialMany(addr string, n int) ([]net.Conn, error) {
	cs := make([]net.Conn, 0, n)
	for i := range n {
		c, err := dial(addr)
		if err != nil {
			closeAll(cs)
			return nil, fmt.Errorf("dial %d of %d: %w", i+1, n, err)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

func closeAll(cs []net.Conn) {
	for _, c := range cs {
		c.Close()
	}
}

// waitFor polls cond every few milliseconds for up to limit.
func waitFor(what string, limit time.Duration, cond func() bool) error {
	for end := time.Now().Add(limit); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(end) {
			return fmt.Errorf("timed out after %v waiting for %s", limit, what)
		}
	}
	return nil
}

// idleChild is the server's side of idle, in a child process: it
// measures HeapInuse+StackInuse (after a GC) with the server listening,
// tells the parent where ("ADDR host:port" on out), waits until the
// server holds the n connections the parent dials, measures again and
// reports the difference per connection as the result. Then it waits for
// the parent, which checks that every held conn still echoes and closes
// them, to close its standard input.
func idleChild(s server, n int, out io.Writer, in io.Reader) (result, error) {
	t0 := time.Now()
	g0 := runtime.NumGoroutine()
	before := heapAndStack()
	fmt.Fprintf(out, "ADDR %s\n", s.Addr())
	if err := waitFor(fmt.Sprintf("%d conns", n), 2*time.Minute, func() bool { return s.Open() >= int64(n) }); err != nil {
		return result{}, fmt.Errorf("%w (the server holds %d)", err, s.Open())
	}
	time.Sleep(50 * time.Millisecond) // let registration finish
	after := heapAndStack()
	if o := s.Open(); o != int64(n) {
		return result{}, fmt.Errorf("the server holds %d conns, want %d", o, n)
	}
	r := result{
		Ops:     int64(n),
		Seconds: time.Since(t0).Seconds(),
		Extra: map[string]float64{
			"bytes_per_conn":      float64(after-before) / float64(n),
			"goroutines_per_conn": float64(runtime.NumGoroutine()-g0) / float64(n),
		},
	}
	if err := writeResult(out, r); err != nil {
		return result{}, err
	}
	io.Copy(io.Discard, in) // until the parent is done with its clients
	if err := waitFor("the server to see every client close", time.Minute, func() bool { return s.Open() == 0 }); err != nil {
		return result{}, err
	}
	return r, nil
}

// idleParent is the clients' side of idle: on the child's ADDR line it
// dials n connections, and once the child has reported, checks that each
// one echoes a byte, and closes them all.
func idleParent(lines *bufio.Scanner, n int) (result, error) {
	if !lines.Scan() {
		return result{}, fmt.Errorf("no ADDR line from the child: %v", lines.Err())
	}
	addr, ok := bytes.CutPrefix(lines.Bytes(), []byte("ADDR "))
	if !ok {
		return result{}, fmt.Errorf("child said %q, want ADDR", lines.Text())
	}
	cs, err := dialMany(string(addr), n)
	if err != nil {
		return result{}, err
	}
	defer closeAll(cs)
	r, err := readResult(lines)
	if err != nil {
		return result{}, err
	}
	deadline := time.Now().Add(ioTimeout + time.Duration(n)*time.Millisecond)
	for i, c := range cs {
		c.SetDeadline(deadline)
		if _, err := c.Write([]byte{byte(i)}); err != nil {
			return result{}, fmt.Errorf("conn %d write: %w", i, err)
		}
	}
	var b [1]byte
	for i, c := range cs {
		if _, err := io.ReadFull(c, b[:]); err != nil || b[0] != byte(i) {
			return result{}, fmt.Errorf("conn %d echo %q: %v", i, b[0], err)
		}
	}
	return r, nil
}

// idleLimit checks that this process may hold n client descriptors.
func idleLimit(n int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if need := uint64(n) + 256; lim.Cur < need {
		return fmt.Errorf("-idle %d needs %d descriptors in each process, RLIMIT_NOFILE allows %d: lower -idle", n, need, lim.Cur)
	}
	return nil
}
