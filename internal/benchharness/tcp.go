//go:build linux

package benchharness

// The loopback TCP workloads cmd/sockbench and cmd/gatebench share, each
// over one contender's sockets (a Stack).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gatenet/gatenet"
)

// Stack is one contender's socket API.
type Stack struct {
	Name   string // "net" or "gatenet"
	Listen func() (net.Listener, error)
	Dial   func(ctx context.Context, network, addr string) (net.Conn, error)
}

// StackFor returns the stack of kind "net" or "gatenet" (on the default
// poller). Both listeners are made with MPTCP off (by default both
// libraries' listeners are MPTCP where the kernel has it), so that both
// run plain TCP and the comparison is of the I/O path alone. Both listen
// on 127.0.0.1.
func StackFor(kind string) (Stack, error) {
	switch kind {
	case "net":
		var lc net.ListenConfig
		lc.SetMultipathTCP(false)
		var d net.Dialer
		return Stack{
			Name:   kind,
			Listen: func() (net.Listener, error) { return lc.Listen(context.Background(), "tcp4", "127.0.0.1:0") },
			Dial:   d.DialContext,
		}, nil
	case "gatenet":
		var lc gatenet.ListenConfig
		lc.SetMultipathTCP(false)
		var d gatenet.Dialer
		return Stack{
			Name:   kind,
			Listen: func() (net.Listener, error) { return lc.Listen(context.Background(), "tcp4", "127.0.0.1:0") },
			Dial:   d.DialContext,
		}, nil
	}
	return Stack{}, fmt.Errorf("unknown -kind %q", kind)
}

// DialTCP dials addr over tcp4.
func (s Stack) DialTCP(addr string) (net.Conn, error) {
	return s.Dial(context.Background(), "tcp4", addr)
}

// ConnPair returns a connected pair: c dialled, a accepted.
func ConnPair(s Stack) (c, a net.Conn, err error) {
	ln, err := s.Listen()
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	// On loopback the handshake completes in connect: the connection
	// waits in the backlog, and Accept finds it there.
	if c, err = s.DialTCP(ln.Addr().String()); err != nil {
		return nil, nil, err
	}
	if a, err = ln.Accept(); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, a, nil
}

// PingPong writes size-byte messages to w and reads each echo back from r:
// 1,000 round trips to warm up, then Run for duration. With lat set, it
// records every measured round trip's time in lat.
func PingPong(w io.Writer, r io.Reader, size int, duration time.Duration, lat *Histogram) (int64, Meter, error) {
	msg := make([]byte, size)
	reply := make([]byte, size)
	roundTrip := func() error {
		if _, err := w.Write(msg); err != nil {
			return err
		}
		_, err := io.ReadFull(r, reply)
		return err
	}
	if lat == nil {
		return Run(1000, duration, roundTrip)
	}
	var t0 time.Time
	timed := func() error {
		t0 = time.Now()
		err := roundTrip()
		lat.Record(time.Since(t0))
		return err
	}
	return Run(1000, duration, timed)
}

// TCPPingPong runs PingPong over one connection of s, the accepted end
// echoing; with lat set, its p50 and p99 land in Extra as "p50_us" and
// "p99_us".
func TCPPingPong(s Stack, size int, duration time.Duration, lat *Histogram) (Result, error) {
	c, a, err := ConnPair(s)
	if err != nil {
		return Result{}, err
	}
	echoDone := Echo(a, a, size)
	defer a.Close()
	n, meter, loopErr := PingPong(c, c, size, duration, lat)
	elapsed, cpu := meter.Stop()
	closeErr := c.Close()
	if err := errors.Join(loopErr, <-echoDone, closeErr); err != nil {
		return Result{}, err
	}
	r := Result{Ops: n, Bytes: n * int64(size), Seconds: elapsed.Seconds(), CPUNanos: cpu}
	if lat != nil {
		r.Extra = map[string]float64{"p50_us": lat.Quantile(0.5) / 1e3, "p99_us": lat.Quantile(0.99) / 1e3}
	}
	return r, nil
}

// TCPBulk streams size-byte writes through one connection of s to a
// reader that discards them.
func TCPBulk(s Stack, size int, duration time.Duration) (Result, error) {
	c, a, err := ConnPair(s)
	if err != nil {
		return Result{}, err
	}
	readDone := Drain(a, size)
	defer a.Close()

	chunk := make([]byte, size)
	write := func() error {
		_, err := c.Write(chunk)
		return err
	}
	const warm = 256 // 32 MiB at 128 KiB: more than loopback's socket buffers hold
	n, meter, loopErr := Run(warm, duration, write)
	closeErr := c.Close()
	g := <-readDone // the tail still in the socket buffers counts
	elapsed, cpu := meter.Stop()
	if err := errors.Join(loopErr, g.Err, closeErr); err != nil {
		return Result{}, err
	}
	// The timed part counts the bytes written in it; the warm-up data
	// still buffered when it starts balances the tail drained after the
	// last write.
	if want := (int64(warm) + n) * int64(size); g.N != want {
		return Result{}, fmt.Errorf("reader got %d bytes, want %d", g.N, want)
	}
	return Result{Ops: n, Bytes: n * int64(size), Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}

// TCPAccept dials, has an acceptor goroutine accept and close, reads EOF
// and closes, over and over: one connection per operation.
func TCPAccept(s Stack, duration time.Duration) (Result, error) {
	ln, err := s.Listen()
	if err != nil {
		return Result{}, err
	}
	addr := ln.Addr().String()
	acceptDone := AcceptAndClose(ln)

	// One connection: dial, wait for the server's close (EOF), close.
	// Waiting keeps dialler and acceptor in step, and leaves the
	// TIME_WAIT on the server's side, where a new SYN may reuse it.
	var buf [1]byte
	conn := func() error { return DialReadEOF(s, addr, buf[:]) }
	const warm = 100
	n, meter, loopErr := Run(warm, duration, conn)
	elapsed, cpu := meter.Stop()
	closeErr := ln.Close()
	g := <-acceptDone
	if err := errors.Join(loopErr, g.Err, closeErr); err != nil {
		return Result{}, err
	}
	if loopErr == nil && g.N != warm+n {
		return Result{}, fmt.Errorf("accepted %d connections, dialled %d", g.N, warm+n)
	}
	return Result{Ops: n, Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}

// Accepted is what an AcceptAndClose loop did: the connections it
// accepted, and the error that ended it (nil when the listener closed).
type Accepted struct {
	N   int64
	Err error
}

// AcceptAndClose accepts on ln and closes each connection at once until
// ln is closed, then sends what it did on the channel.
func AcceptAndClose(ln net.Listener) <-chan Accepted {
	done := make(chan Accepted, 1)
	go func() {
		var n int64
		for {
			a, err := ln.Accept()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil
				}
				done <- Accepted{n, err}
				return
			}
			n++
			if err := a.Close(); err != nil {
				done <- Accepted{n, err}
				return
			}
		}
	}()
	return done
}

// DialReadEOF is one connection of an accept or dial loop: dial addr,
// read into buf until the server's close (any data is an error), close.
func DialReadEOF(s Stack, addr string, buf []byte) error {
	c, err := s.DialTCP(addr)
	if err != nil {
		return err
	}
	_, err = c.Read(buf)
	if err == io.EOF {
		err = nil
	} else if err == nil {
		err = errors.New("read data, want EOF")
	}
	return errors.Join(err, c.Close())
}
