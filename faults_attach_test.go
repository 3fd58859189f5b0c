//go:build linux

package gatenet_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/nettest"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/tlstest"
)

// faultyPair is a gatenet TCP pair on 127.0.0.1 with cf attached to the
// client and sf to the server (nil: none).
func faultyPair(t *testing.T, cf, sf *faults.Faults) (c, s *gatenet.TCPConn) {
	t.Helper()
	c, s = testutil.TCPPair(t)
	require.NoError(t, gatenet.InjectFaults(c, cf))
	require.NoError(t, gatenet.InjectFaults(s, sf))
	return c, s
}

// naiveReads writes msgs messages of size bytes from w and reads each with
// one Read on r, as a reader that assumes a Read per message would; it
// returns the sizes those Reads got.
func naiveReads(t *testing.T, w, r net.Conn, msgs, size int) []int {
	t.Helper()
	var got []int
	buf := make([]byte, size)
	msg := bytes.Repeat([]byte{'m'}, size)
	for range msgs {
		_, err := w.Write(msg)
		require.NoError(t, err)
		n, err := r.Read(buf)
		require.NoError(t, err)
		got = append(got, n)
		if n < size { // drain the rest so the next message starts clean
			_, err := io.ReadFull(r, buf[:size-n])
			require.NoError(t, err)
		}
	}
	return got
}

// TestFaultsSlicerIsReal: a reader that assumes one Read per message gets
// whole messages without faults and short ones under the slicer.
func TestFaultsSlicerIsReal(t *testing.T) {
	testutil.CheckLeaks(t)
	c, s := faultyPair(t, nil, nil)
	for _, n := range naiveReads(t, c, s, 20, 64) {
		require.Equal(t, 64, n, "without faults a 64-byte write arrives whole on loopback")
	}
	f := faults.New(1, faults.Slicer{Min: 1, Max: 7})
	c, s = faultyPair(t, nil, f)
	for _, n := range naiveReads(t, c, s, 20, 64) {
		require.LessOrEqual(t, n, 7, "the slicer's chunk bounds every read")
	}
	require.Positive(t, f.Stats().Chunks)
}

// echoThrough sends size bytes of a pattern from a to b and back, each way
// concurrently with the other, and checks every byte.
func echoThrough(t *testing.T, a, b io.ReadWriter, size int) {
	t.Helper()
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(1)
	go func() { // b echoes what it reads
		defer wg.Done()
		buf := make([]byte, size)
		if _, err := io.ReadFull(b, buf); err != nil {
			errs <- err
			return
		}
		_, err := b.Write(buf)
		errs <- err
	}()
	_, err := a.Write(want)
	require.NoError(t, err)
	got := make([]byte, size)
	_, err = io.ReadFull(a, got)
	require.NoError(t, err)
	wg.Wait()
	require.NoError(t, <-errs)
	require.True(t, bytes.Equal(want, got), "%d bytes sent and echoed differ", size)
}

func TestFaultsTLSUnderSlicer(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(v), func(t *testing.T) {
			f := faults.New(7, faults.Slicer{Min: 1, Max: 7})
			server := tlstest.DefaultServerConfig()
			server.MinVersion, server.MaxVersion = v, v
			c, s := tlstest.PairFaults(t, f, server, nil)
			require.Equal(t, v, c.ConnectionState().Version)
			echoThrough(t, c, s, 64<<10)
			require.Positive(t, f.Stats().Chunks, "the handshake and the records went through the slicer")
		})
	}
}

func TestFaultsNettestUnderSlicer(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(3, faults.Slicer{Min: 1, Max: 7})
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		ln, err := (&gatenet.ListenConfig{Faults: f}).Listen(context.Background(), "tcp4", "127.0.0.1:0")
		if err != nil {
			return nil, nil, nil, err
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		c, err := (&gatenet.Dialer{Faults: f}).Dial("tcp4", ln.Addr().String())
		s := <-accepted
		if err != nil || s == nil {
			if c != nil {
				c.Close()
			}
			if s != nil {
				s.Close()
			}
			return nil, nil, nil, errors.Join(err, errors.New("accept failed"))
		}
		return c, s, func() { c.Close(); s.Close() }, nil
	})
	require.Positive(t, f.Stats().Chunks)
}

// TestFaultsCloseAfter: the peer reads exactly N bytes, then io.EOF; the
// writer's Write reports the N it wrote and an error.
func TestFaultsCloseAfter(t *testing.T) {
	testutil.CheckLeaks(t)
	const n = 1000
	f := faults.New(1, faults.CloseAfter{N: n})
	c, s := faultyPair(t, f, nil)
	wrote, err := c.Write(make([]byte, 5000))
	require.Equal(t, n, wrote)
	require.ErrorIs(t, err, syscall.EPIPE)
	got, err := io.ReadAll(s)
	require.NoError(t, err, "io.ReadAll stops at io.EOF")
	require.Len(t, got, n)
	require.EqualValues(t, 1, f.Stats().Closes)
}

// TestFaultsResetAfter: after N bytes the connection is reset: the peer
// reads at most N bytes and then ECONNRESET; the writer's later calls
// fail with ECONNRESET too.
func TestFaultsResetAfter(t *testing.T) {
	testutil.CheckLeaks(t)
	const n = 1000
	f := faults.New(1, faults.ResetAfter{N: n})
	c, s := faultyPair(t, f, nil)
	wrote, err := c.Write(make([]byte, 5000))
	require.Equal(t, n, wrote)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	got, err := io.ReadAll(s)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	require.LessOrEqual(t, len(got), n)
	_, err = c.Write([]byte("x"))
	require.ErrorIs(t, err, syscall.ECONNRESET)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "write", op.Op)
}

// TestFaultsResetAfterLocalAddr: a reset fault disconnects the socket
// (connect(AF_UNSPEC)), after which the kernel reports 0.0.0.0 as its
// address; a conn whose local address nobody had asked for still reports
// the one it had, as after a real RST (a peer's linger-0 Close, over
// gatenet and over net): in the *net.OpError of the call that meets the
// reset (Source) and in LocalAddr, asked only then, both what the peer
// sees as its RemoteAddr. The fault is attached by each of Dialer,
// ListenConfig (the accepted conn) and InjectFaults.
func TestFaultsResetAfterLocalAddr(t *testing.T) {
	testutil.CheckLeaks(t)
	reset := func() *faults.Faults { return faults.New(1, faults.ResetAfter{N: 0}) }
	// pair dials ln's port on 127.0.0.1, and accepts.
	pair := func(t *testing.T, ln net.Listener, dial func(network, address string) (net.Conn, error)) (c, s net.Conn) {
		accepted := make(chan net.Conn, 1)
		go func() {
			s, _ := ln.Accept()
			accepted <- s
		}()
		c, err := dial("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)))
		require.NoError(t, err)
		s = <-accepted
		require.NotNil(t, s)
		t.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	listen := func(t *testing.T, lc *gatenet.ListenConfig, address string) net.Listener {
		ln, err := lc.Listen(context.Background(), "tcp4", address)
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	write := func(c net.Conn) error { _, err := c.Write([]byte("x")); return err }
	read := func(c net.Conn) error { _, err := c.Read(make([]byte, 8)); return err }
	// Each case returns the conn under test, its peer, and the call that
	// meets the reset.
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (c, peer net.Conn, call func(net.Conn) error)
	}{
		{"Dialer", func(t *testing.T) (net.Conn, net.Conn, func(net.Conn) error) {
			d := &gatenet.Dialer{Faults: reset()}
			c, peer := pair(t, listen(t, &gatenet.ListenConfig{}, "127.0.0.1:0"), d.Dial)
			return c, peer, write
		}},
		{"ListenConfig", func(t *testing.T) (net.Conn, net.Conn, func(net.Conn) error) {
			// On the wildcard address: a socket bound to a given address
			// keeps it through the reset, an accepted one as its listener.
			peer, c := pair(t, listen(t, &gatenet.ListenConfig{Faults: reset()}, "0.0.0.0:0"), gatenet.Dial)
			return c, peer, write
		}},
		{"InjectFaults", func(t *testing.T) (net.Conn, net.Conn, func(net.Conn) error) {
			c, peer := testutil.TCPPair(t)
			require.NoError(t, gatenet.InjectFaults(c, reset()))
			return c, peer, write
		}},
		{"real RST", func(t *testing.T) (net.Conn, net.Conn, func(net.Conn) error) {
			c, peer := testutil.TCPPair(t)
			require.NoError(t, peer.SetLinger(0))
			return c, peer, read
		}},
		{"real RST, net", func(t *testing.T) (net.Conn, net.Conn, func(net.Conn) error) {
			c, peer := testutil.NetTCPPair(t)
			require.NoError(t, peer.SetLinger(0))
			return c, peer, read
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer, call := tc.setup(t)
			want := peer.RemoteAddr().String()
			require.Contains(t, want, "127.0.0.1:")
			if strings.HasPrefix(tc.name, "real RST") {
				require.NoError(t, peer.Close()) // linger 0: a RST
			}
			err := call(c)
			require.ErrorIs(t, err, syscall.ECONNRESET)
			var op *net.OpError
			require.ErrorAs(t, err, &op)
			require.Equal(t, want, op.Source.String(), "the error's local address: %v", err)
			require.Equal(t, want, c.LocalAddr().String())
		})
	}
}

// TestFaultsBandwidth: 1 MiB at 1 MiB/s takes at least 0.9 s (a lower
// bound only).
func TestFaultsBandwidth(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(1, faults.Bandwidth{BytesPerSecond: 1 << 20, Dir: faults.Write})
	c, s := faultyPair(t, f, nil)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := c.Write(make([]byte, 1<<20))
		done <- err
	}()
	_, err := io.ReadFull(s, make([]byte, 1<<20))
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond)
	require.Positive(t, f.Stats().Delays)
}

// TestFaultsLatency: no byte of a Write arrives before the latency has
// passed since the Write began (a lower bound only).
func TestFaultsLatency(t *testing.T) {
	testutil.CheckLeaks(t)
	const d = 50 * time.Millisecond
	f := faults.New(1, faults.Latency{Delay: d})
	c, s := faultyPair(t, f, nil)
	for range 3 {
		start := time.Now()
		go c.Write([]byte("ping"))
		_, err := io.ReadFull(s, make([]byte, 4))
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), d)
	}
}

// TestFaultsStall: after N bytes the reader gets nothing more: a Read
// waits for its deadline, and Close unblocks a stalled Read.
func TestFaultsStall(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(1, faults.Stall{After: 10})
	c, s := faultyPair(t, nil, f)
	_, err := c.Write(make([]byte, 100))
	require.NoError(t, err)
	_, err = io.ReadFull(s, make([]byte, 10))
	require.NoError(t, err)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = s.Read(make([]byte, 10))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, s.SetReadDeadline(time.Time{}))
	res := goRead(s, make([]byte, 10))
	requireStillBlocked(t, res, 20*time.Millisecond, "a stalled Read")
	require.NoError(t, s.Close())
	r := <-res
	require.ErrorIs(t, r.Err, net.ErrClosed)
	require.EqualValues(t, 1, f.Stats().Stalls)
}

// TestFaultsEAGAINAndWakeups: spurious EAGAIN and wake-ups run the retry
// loops without losing or reordering a byte.
func TestFaultsEAGAINAndWakeups(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(5, faults.EAGAIN{P: 0.5}, faults.Wakeups{P: 1})
	c, s := faultyPair(t, f, f)
	for range 50 {
		echoThrough(t, c, s, 1000)
	}
	st := f.Stats()
	require.Positive(t, st.EAGAINs)
	require.Positive(t, st.Wakeups)
}

// TestFaultsSameSeedSameChunks: the slicer's chunk sizes replay from the
// seed, and another seed gives others.
func TestFaultsSameSeedSameChunks(t *testing.T) {
	testutil.CheckLeaks(t)
	chunks := func(seed uint64) []int {
		var mu sync.Mutex
		var sizes []int
		f := faults.New(seed, faults.Slicer{Min: 1, Max: 100, Dir: faults.Write})
		f.Log = func(ev faults.Event) {
			if ev.Kind == "slice" {
				mu.Lock()
				sizes = append(sizes, ev.N)
				mu.Unlock()
			}
		}
		c, s := faultyPair(t, f, nil)
		go c.Write(make([]byte, 10000))
		_, err := io.ReadFull(s, make([]byte, 10000))
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		return sizes
	}
	a, b, other := chunks(42), chunks(42), chunks(43)
	require.NotEmpty(t, a)
	require.Equal(t, a, b)
	require.NotEqual(t, a, other)
}

func TestFaultsDial(t *testing.T) {
	testutil.CheckLeaks(t)
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	for _, e := range []syscall.Errno{syscall.ECONNREFUSED, syscall.ENETUNREACH} {
		d := gatenet.Dialer{Faults: faults.New(1, faults.DialErrors{Err: e})}
		_, err := d.Dial("tcp4", addr)
		require.ErrorIs(t, err, e)
		var op *net.OpError
		require.ErrorAs(t, err, &op)
		require.Equal(t, "dial", op.Op)
		var sys *os.SyscallError
		require.ErrorAs(t, err, &sys)
		require.Equal(t, "connect", sys.Syscall)
	}
	d := gatenet.Dialer{Timeout: 50 * time.Millisecond, Faults: faults.New(1, faults.DialErrors{})}
	_, err = d.Dial("tcp4", addr)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a hanging connect ends at the dial's deadline, as net's does")
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = (&gatenet.Dialer{Faults: faults.New(1, faults.DialErrors{})}).DialContext(ctx, "tcp4", addr)
	require.ErrorIs(t, err, context.Canceled)
}

func TestFaultsUDP(t *testing.T) {
	testutil.CheckLeaks(t)
	pair := func(f *faults.Faults) (w, r *gatenet.UDPConn) {
		w, r = udpLoopbackPair(t)
		require.NoError(t, gatenet.InjectFaults(w, f))
		return w, r
	}
	// receive reads datagrams until none comes for a second (longer than
	// any delay here, so nothing still on its way is missed).
	receive := func(r *gatenet.UDPConn) []byte {
		var got []byte
		buf := make([]byte, 16)
		for {
			r.SetReadDeadline(time.Now().Add(time.Second))
			n, _, err := r.ReadFromUDP(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return got
			}
			require.NoError(t, err)
			require.Equal(t, 1, n)
			got = append(got, buf[0])
		}
	}
	send := func(w *gatenet.UDPConn, n int) {
		for i := range n {
			wrote, err := w.Write([]byte{byte(i)})
			require.NoError(t, err)
			require.Equal(t, 1, wrote)
		}
	}
	t.Run("drop", func(t *testing.T) {
		f := faults.New(1, faults.Drop{P: 1})
		w, r := pair(f)
		send(w, 10)
		require.Empty(t, receive(r))
		require.EqualValues(t, 10, f.Stats().Dropped)
	})
	t.Run("duplicate", func(t *testing.T) {
		f := faults.New(1, faults.Duplicate{P: 1})
		w, r := pair(f)
		send(w, 5)
		require.Equal(t, []byte{0, 0, 1, 1, 2, 2, 3, 3, 4, 4}, receive(r))
	})
	t.Run("reorder", func(t *testing.T) {
		f := faults.New(1, faults.Reorder{P: 0.3, Delay: 300 * time.Millisecond})
		w, r := pair(f)
		send(w, 20)
		got := receive(r)
		require.ElementsMatch(t, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, got, "every datagram arrives once")
		held := f.Stats().Reordered
		require.Positive(t, held)
		// A datagram held back arrives after every one written within its delay.
		require.NotEqual(t, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, got)
	})
}

func TestFaultsPipeSlicer(t *testing.T) {
	testutil.CheckLeaks(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.NoError(t, gatenet.InjectFaults(r, faults.New(1, faults.Slicer{Min: 1, Max: 3})))
	go w.Write(make([]byte, 300))
	buf := make([]byte, 300)
	for got := 0; got < 300; {
		n, err := r.Read(buf)
		require.NoError(t, err)
		require.LessOrEqual(t, n, 3)
		got += n
	}
}

func TestInjectFaultsBadInput(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(1, faults.Slicer{Min: 1, Max: 7})
	// A conn of another package is a compile-time error: Pollable is sealed.
	require.Error(t, gatenet.InjectFaults(nil, f))
	require.Error(t, gatenet.InjectFaults((*gatenet.TCPConn)(nil), f))
	require.Error(t, gatenet.InjectFaults((*gatenet.UnixListener)(nil), f))
	require.Error(t, gatenet.InjectFaults((*gatenet.File)(nil), f))
	require.Error(t, gatenet.InjectFaults(&gatenet.UDPConn{}, f), "a zero conn")
	c, _ := testutil.TCPPair(t)
	require.ErrorContains(t, gatenet.InjectFaults(c, faults.New(1, faults.Slicer{Min: 5, Max: 1})), "Min")
	require.NoError(t, c.Close())
	require.ErrorIs(t, gatenet.InjectFaults(c, f), net.ErrClosed)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	w.Close()
	r.Close()
	require.ErrorIs(t, gatenet.InjectFaults(r, f), os.ErrClosed)
}

// TestFaultsFromEnvironment runs TestFaultsEnvChild in a child process
// with GATENET_FAULTS set: faults reach descriptors no test code attached
// them to, and an invalid setting is every socket's error.
func TestFaultsFromEnvironment(t *testing.T) {
	for _, tc := range []struct{ mode, spec string }{
		{"valid", "slicer.read=1-3;seed=7"},
		{"invalid", "slicer=9-1"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			testutil.RunChild(t, "TestFaultsEnvChild", faults.EnvVar+"="+tc.spec, "GATENET_FAULTS_CHILD="+tc.mode)
		})
	}
}

func TestFaultsEnvChild(t *testing.T) {
	mode := os.Getenv("GATENET_FAULTS_CHILD")
	switch mode {
	case "valid":
		c, s := testutil.TCPPair(t)
		for _, n := range naiveReads(t, c, s, 10, 64) {
			require.LessOrEqual(t, n, 3)
		}
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		go w.Write(make([]byte, 64))
		n, err := r.Read(make([]byte, 64))
		require.NoError(t, err)
		require.LessOrEqual(t, n, 3, "pipes too")
	case "invalid":
		_, err := gatenet.Listen("tcp4", "127.0.0.1:0")
		require.ErrorContains(t, err, faults.EnvVar)
		require.ErrorContains(t, err, "Min")
	default:
		t.Skip("run by TestFaultsFromEnvironment")
	}
}
