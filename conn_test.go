//go:build linux

package gatenet_test

// Data through gatenet sockets: bulk round trips verified by SHA-256, a
// burst of simultaneous dials, and Close unblocking every kind of blocked
// operation, under each poller strategy where it is cheap to.

import (
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// sockPairOn is a connected gatenet pair whose three sockets use poller p.
func sockPairOn(t testing.TB, p *pollfd.Poller, network string) (client, server net.Conn, ln net.Listener) {
	t.Helper()
	lc := gatenet.ListenConfig{Poller: p}
	ln, err := lc.Listen(t.Context(), network, sockAddress(t, network))
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	d := gatenet.Dialer{Poller: p}
	client, server, err = testutil.Connect(ln, func() (net.Conn, error) { return d.Dial(network, ln.Addr().String()) })
	require.NoError(t, err)
	t.Cleanup(func() {
		client.Close()
		server.Close()
	})
	return client, server, ln
}

type sockAcceptResult struct {
	c   net.Conn
	err error
}

// sockParkedReads starts n Reads of size bytes on c, each on a goroutine
// of its own, and returns once one of them has parked in p (the others
// queue behind it on the conn's read lock); their results arrive on the
// channel it returns, in the order they end.
func sockParkedReads(t testing.TB, p *pollfd.Poller, c net.Conn, n, size int) <-chan ioResult {
	t.Helper()
	before := p.Stats().Parks
	results := make(chan ioResult, n)
	for range n {
		go func() {
			n, err := c.Read(make([]byte, size))
			results <- ioResult{n, err}
		}()
	}
	sockWaitParks(t, p, before)
	return results
}

// sockWaitParks waits until p has counted more than before parks: an
// operation is blocked in the poller.
func sockWaitParks(t testing.TB, p *pollfd.Poller, before uint64) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); p.Stats().Parks <= before; {
		require.True(t, time.Now().Before(deadline), "no operation ever parked")
		time.Sleep(time.Millisecond)
	}
}

// sockSend writes size pseudo-random bytes (seeded) to c, then CloseWrite,
// and returns their SHA-256.
func sockSend(c net.Conn, size int64, seed uint64) ([32]byte, error) {
	h := sha256.New()
	src := io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{byte(seed)}), size), h)
	if _, err := io.Copy(c, src); err != nil {
		return [32]byte{}, err
	}
	if err := c.(sockConn).CloseWrite(); err != nil {
		return [32]byte{}, err
	}
	return [32]byte(h.Sum(nil)), nil
}

// sockReceive reads c to EOF and returns the count and SHA-256.
func sockReceive(c net.Conn) (int64, [32]byte, error) {
	h := sha256.New()
	n, err := io.Copy(h, c)
	return n, [32]byte(h.Sum(nil)), err
}

func TestSockRoundTrip64MiB(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	const size = 64 << 20
	strategies := testutil.Strategies()
	for i, network := range []string{"tcp4", "tcp6", "unix"} {
		// One strategy per network keeps the cost down while covering three.
		o := strategies[i%len(strategies)]
		t.Run(network+"/"+o.String(), func(t *testing.T) {
			if network == "tcp6" && !supportsIPv6Loopback() {
				t.Skip("IPv6 loopback ([::1]) is not available on this machine")
			}
			testutil.CheckLeaks(t)
			p := testutil.NewPoller(t, o)
			c, s, _ := sockPairOn(t, p, network)
			type sent struct {
				sum [32]byte
				err error
			}
			type received struct {
				n   int64
				sum [32]byte
				err error
			}
			var sentC, sentS = make(chan sent, 1), make(chan sent, 1)
			var recvC, recvS = make(chan received, 1), make(chan received, 1)
			for _, e := range []struct {
				conn net.Conn
				seed uint64
				sent chan sent
				recv chan received
			}{{c, 1, sentC, recvC}, {s, 2, sentS, recvS}} {
				go func() {
					sum, err := sockSend(e.conn, size, e.seed)
					e.sent <- sent{sum, err}
				}()
				go func() {
					n, sum, err := sockReceive(e.conn)
					e.recv <- received{n, sum, err}
				}()
			}
			fromC, fromS, atS, atC := <-sentC, <-sentS, <-recvS, <-recvC
			require.NoError(t, fromC.err)
			require.NoError(t, fromS.err)
			require.NoError(t, atS.err)
			require.NoError(t, atC.err)
			require.Equal(t, int64(size), atS.n)
			require.Equal(t, int64(size), atC.n)
			require.Equal(t, fromC.sum, atS.sum, "client → server data differs")
			require.Equal(t, fromS.sum, atC.sum, "server → client data differs")
		})
	}
}

// supportsIPv6Loopback reports whether [::1] can be bound.
func supportsIPv6Loopback() bool {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// TestSockAcceptBurst: 1,000 goroutines dial at once; with a backlog
// large enough every dial succeeds, Accept returns 1,000 conns, and the
// descriptor count returns to where it was.
func TestSockAcceptBurst(t *testing.T) {
	testutil.Watchdog(t, 5*time.Minute)
	testutil.CheckLeaks(t)
	const n = 1000
	baseline := testutil.OpenFDs(t)
	lc := gatenet.ListenConfig{Backlog: 2048}
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	start := make(chan struct{})
	dialed := make(chan sockAcceptResult, n)
	for range n {
		go func() {
			<-start
			c, err := gatenet.Dial("tcp", ln.Addr().String())
			dialed <- sockAcceptResult{c, err}
		}()
	}
	close(start)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := ln.Accept()
		require.NoError(t, err)
		conns = append(conns, c)
	}
	var dialErrs []error
	for range n {
		d := <-dialed
		if d.err != nil {
			dialErrs = append(dialErrs, d.err)
			continue
		}
		conns = append(conns, d.c)
	}
	require.Empty(t, dialErrs)
	require.Len(t, conns, 2*n)
	require.NoError(t, ln.Close())
	for _, c := range conns {
		require.NoError(t, c.Close())
	}
	conns = nil
	require.Equal(t, baseline, testutil.OpenFDs(t), "descriptors after closing everything")
}

// TestSockCloseUnblocks: Close from another goroutine unblocks a blocked
// Accept, Read and Write with net.ErrClosed in an OpError naming the op.
func TestSockCloseUnblocks(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			testutil.EachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
				requireClosedOp := func(err error, op string) {
					t.Helper()
					require.ErrorIs(t, err, net.ErrClosed)
					var oe *net.OpError
					require.True(t, errors.As(err, &oe), "%T: %v", err, err)
					require.Equal(t, op, oe.Op)
					require.Contains(t, err.Error(), "use of closed network connection")
				}
				_, s, ln := sockPairOn(t, p, network)

				// Accept.
				before := p.Stats().Parks
				accepted := make(chan sockAcceptResult, 1)
				go func() {
					c, err := ln.Accept()
					accepted <- sockAcceptResult{c, err}
				}()
				sockWaitParks(t, p, before)
				require.NoError(t, ln.Close())
				a := <-accepted
				require.Nil(t, a.c)
				requireClosedOp(a.err, "accept")
				var ne net.Error
				require.True(t, errors.As(a.err, &ne))
				//lint:ignore SA1019 net/http's Serve retries a Temporary Accept error: a closed listener's must not be one, or Serve would spin
				require.False(t, ne.Temporary())

				// Read.
				before = p.Stats().Parks
				rd := goRead(s, make([]byte, 8))
				sockWaitParks(t, p, before)
				require.NoError(t, s.Close())
				r := <-rd
				require.Zero(t, r.N)
				requireClosedOp(r.Err, "read")

				// Write: small buffers and a peer that does not read.
				c2, s2, _ := sockPairOn(t, p, network)
				require.NoError(t, s2.(sockConn).SetReadBuffer(4096))
				require.NoError(t, c2.(sockConn).SetWriteBuffer(4096))
				big := make([]byte, 16<<20)
				before = p.Stats().Parks
				wr := goWrite(c2, big)
				sockWaitParks(t, p, before)
				require.NoError(t, c2.Close())
				w := <-wr
				require.Greater(t, w.N, 0, "part of the write went through")
				require.Less(t, w.N, len(big))
				requireClosedOp(w.Err, "write")
			})
		})
	}
}

// TestSockConcurrentReads (checklist row 1): concurrent Reads queue rather
// than fail, each gets its byte; a Write completes while Reads are blocked.
func TestSockConcurrentReads(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	testutil.EachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		c, s, _ := sockPairOn(t, p, "tcp")
		results := sockParkedReads(t, p, s, 3, 1)
		// A Write on the same conn is not held up by the blocked Reads.
		sendRecv(t, s, c, "w")
		for i := range 3 {
			_, err := c.Write([]byte{byte('a' + i)})
			require.NoError(t, err)
			r := <-results
			require.NoError(t, r.Err)
			require.Equal(t, 1, r.N)
		}
	})
}

// TestSockCloseWakesQueuedReads (checklist row 5): one Read parked in the
// poller and two queued on the read lock all return ErrClosed on Close.
func TestSockCloseWakesQueuedReads(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	testutil.EachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		_, s, _ := sockPairOn(t, p, "tcp")
		results := sockParkedReads(t, p, s, 3, 8)
		requireStillBlocked(t, results, 30*time.Millisecond, "a Read on an idle conn")
		require.NoError(t, s.Close())
		for range 3 {
			r := <-results
			require.Zero(t, r.N)
			require.ErrorIs(t, r.Err, net.ErrClosed)
		}
	})
}
