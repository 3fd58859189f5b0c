//go:build linux

package gatenet_test

// UDP echo over the IPv4 and IPv6 loopback: datagrams of random sizes up
// to the protocol's maximum, each echoed and compared byte for byte with
// what was sent (so a datagram merged, split, truncated or corrupted on
// either leg fails the test). Loopback UDP may drop under buffer
// pressure, so the client is stop-and-wait: it sends the next datagram
// only once the echo of the previous one is in, and resends on a read
// deadline (a lower bound on waiting, never an upper bound on time).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

const (
	udpMaxPayload4 = 65535 - 20 - 8 // 65,507: IPv4 header and UDP header
	udpMaxPayload6 = 65535 - 8      // 65,527: the IPv6 payload length counts the UDP header only
	udpEchoHeader  = 8              // the sequence number
)

// udpEchoServe echoes every datagram on pc to its sender until pc is
// closed, checking each arrived whole (no MSG_TRUNC). It reports the
// first unexpected error on errc (nil on a clean close). A lossy server
// drops the first copy of every 50th datagram and echoes every 70th
// twice, so that the client's resending and discarding are exercised.
func udpEchoServe(pc udpConn, lossy bool, errc chan<- error) {
	buf := make([]byte, 65536)
	dropped := map[uint64]bool{}
	for {
		n, _, flags, from, err := pc.ReadMsgUDPAddrPort(buf, nil)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				err = nil
			}
			errc <- err
			return
		}
		if flags&unix.MSG_TRUNC != 0 {
			errc <- errors.New("server: a datagram arrived truncated")
			return
		}
		copies := 1
		if lossy && n >= udpEchoHeader {
			seq := binary.BigEndian.Uint64(buf)
			if seq%50 == 7 && !dropped[seq] {
				dropped[seq] = true
				continue
			}
			if seq%70 == 3 {
				copies = 2
			}
		}
		for range copies {
			if _, err := pc.WriteToUDPAddrPort(buf[:n], from); err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil
				}
				errc <- err
				return
			}
		}
	}
}

// udpStartEcho starts udpEchoServe on pc; when t ends, pc is closed and
// the server must have stopped cleanly.
func udpStartEcho(t *testing.T, pc udpConn, lossy bool) {
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		udpEchoServe(pc, lossy, errc)
	}()
	t.Cleanup(func() {
		pc.Close()
		wg.Wait()
		if err := <-errc; err != nil {
			t.Errorf("echo server: %v", err)
		}
	})
}

// udpEchoStats is what a run did.
type udpEchoStats struct {
	Datagrams, Bytes   int
	Retransmits, Stale int
	Elapsed            time.Duration
}

// udpEchoClient sends count datagrams to the echo server at server and
// verifies each echo. connected: c was dialed to the server and uses
// Write/Read; otherwise it uses WriteToUDPAddrPort/ReadFromUDP and checks
// the echo came from the server. A datagram whose echo has not come
// within rto is sent again, with the wait doubled (up to 2 s), at most
// 20 times.
func udpEchoClient(t *testing.T, c udpConn, connected bool, server netip.AddrPort, maxPayload, count int, rto0 time.Duration, seed uint64) udpEchoStats {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// Payloads are slices of a random pool, with the sequence number
	// written over their first 8 bytes.
	pool := make([]byte, 1<<20)
	for i := range pool {
		pool[i] = byte(rng.Uint32())
	}
	msg := make([]byte, maxPayload)
	buf := make([]byte, maxPayload+1) // a merged or oversized echo would show
	edges := []int{udpEchoHeader, udpEchoHeader + 1, 1472, 1473, 8192, maxPayload - 1, maxPayload}
	var st udpEchoStats
	start := time.Now()
	for seq := 0; seq < count; seq++ {
		size := udpEchoHeader + rng.IntN(maxPayload-udpEchoHeader+1)
		if seq < len(edges) {
			size = edges[seq]
		}
		off := rng.IntN(len(pool) - size + 1)
		m := msg[:size]
		copy(m, pool[off:off+size])
		binary.BigEndian.PutUint64(m, uint64(seq))

		rto := rto0
		for attempt := 0; ; attempt++ {
			require.Less(t, attempt, 20, "datagram %d (%d bytes): no echo after %d sends", seq, size, attempt)
			if attempt > 0 {
				st.Retransmits++
				rto = min(2*rto, 2*time.Second)
			}
			var err error
			if connected {
				_, err = c.Write(m)
			} else {
				_, err = c.WriteToUDPAddrPort(m, server)
			}
			require.NoError(t, err, "send %d (%d bytes)", seq, size)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(rto)))
			got := false
			for !got {
				var n int
				if connected {
					n, err = c.Read(buf)
				} else {
					var from *net.UDPAddr
					n, from, err = c.ReadFromUDP(buf)
					if err == nil {
						require.Equal(t, server, netip.AddrPortFrom(from.AddrPort().Addr().Unmap(), from.AddrPort().Port()),
							"echo from a stranger")
					}
				}
				if errors.Is(err, os.ErrDeadlineExceeded) {
					break // resend
				}
				require.NoError(t, err, "receive %d", seq)
				require.GreaterOrEqual(t, n, udpEchoHeader, "a runt datagram (%d bytes)", n)
				if rseq := binary.BigEndian.Uint64(buf); rseq != uint64(seq) {
					require.Less(t, rseq, uint64(seq), "an echo from the future")
					st.Stale++ // the echo of a resent datagram
					continue
				}
				require.Equal(t, size, n, "datagram %d: echo of %d bytes", seq, n)
				if !bytes.Equal(m, buf[:n]) {
					t.Fatalf("datagram %d (%d bytes): the echo differs from what was sent", seq, size)
				}
				got = true
			}
			if got {
				break
			}
		}
		st.Datagrams++
		st.Bytes += size
	}
	st.Elapsed = time.Since(start)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	return st
}

func (st udpEchoStats) log(t *testing.T, what string) {
	t.Helper()
	secs := st.Elapsed.Seconds()
	t.Logf("%s: %d datagrams, %.1f MiB each way in %v (%.0f datagrams/s, %.1f MiB/s), %d resends, %d stale echoes",
		what, st.Datagrams, float64(st.Bytes)/(1<<20), st.Elapsed.Round(time.Millisecond),
		float64(st.Datagrams)/secs, float64(st.Bytes)/(1<<20)/secs, st.Retransmits, st.Stale)
}

// udpEchoRun runs an echo server and a client on one stack's sockets.
type udpEchoRun struct {
	listen func(network, address string) (udpConn, error) // unconnected socket
	dial   func(network, address string) (udpConn, error) // connected socket
	lossy  bool                                           // the server drops and duplicates some
}

func (r udpEchoRun) run(t *testing.T, network string, connected bool, count int) udpEchoStats {
	t.Helper()
	udpSkipUnlessNetwork(t, network)
	maxPayload := udpMaxPayload4
	if network == "udp6" {
		maxPayload = udpMaxPayload6
	}
	srv, err := r.listen(network, udpLoopback(network))
	require.NoError(t, err)
	udpStartEcho(t, srv, r.lossy)
	server := srv.LocalAddr().(*net.UDPAddr).AddrPort()
	var c udpConn
	if connected {
		c, err = r.dial(network, server.String())
	} else {
		c, err = r.listen(network, udpLoopback(network))
	}
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rto := 200 * time.Millisecond
	if r.lossy {
		rto = 20 * time.Millisecond // a spurious resend only makes a stale echo
	}
	return udpEchoClient(t, c, connected, server, maxPayload, count, rto, seed)
}

func udpAsConn(c any, err error) (udpConn, error) {
	if err != nil {
		return nil, err
	}
	return c.(udpConn), nil
}

var (
	udpEchoGatenet = udpEchoRun{
		listen: func(network, address string) (udpConn, error) {
			return udpAsConn(gatenet.ListenPacket(network, address))
		},
		dial: func(network, address string) (udpConn, error) { return udpAsConn(gatenet.Dial(network, address)) },
	}
	udpEchoNet = udpEchoRun{
		listen: func(network, address string) (udpConn, error) { return udpAsConn(net.ListenPacket(network, address)) },
		dial:   func(network, address string) (udpConn, error) { return udpAsConn(net.Dial(network, address)) },
	}
)

// udpEchoOn is gatenet on poller p: ListenConfig.ListenPacket and Dialer.
func udpEchoOn(p *gatenet.ListenConfig, d *gatenet.Dialer) udpEchoRun {
	return udpEchoRun{
		listen: func(network, address string) (udpConn, error) {
			return udpAsConn(p.ListenPacket(context.Background(), network, address))
		},
		dial: func(network, address string) (udpConn, error) { return udpAsConn(d.Dial(network, address)) },
	}
}

// TestUDPEcho: 10,000 datagrams per case on the default poller, over
// IPv4 and IPv6, from a connected client (Write/Read) and an unconnected
// one (WriteToUDPAddrPort/ReadFromUDP); net runs the same as a reference.
func TestUDPEcho(t *testing.T) {
	testutil.Watchdog(t, 10*time.Minute)
	const count = 10000
	for _, network := range []string{"udp4", "udp6"} {
		for _, connected := range []bool{true, false} {
			mode := "unconnected"
			if connected {
				mode = "connected"
			}
			for _, stack := range []struct {
				name string
				run  udpEchoRun
			}{{"gatenet", udpEchoGatenet}, {"net", udpEchoNet}} {
				t.Run(network+"/"+mode+"/"+stack.name, func(t *testing.T) {
					testutil.CheckLeaks(t)
					st := stack.run.run(t, network, connected, count)
					require.Equal(t, count, st.Datagrams)
					st.log(t, stack.name+" "+network+" "+mode)
				})
			}
		}
	}
}

// TestUDPEchoStrategies: the echo on a poller of each strategy (both
// ends registered with it), 1,000 datagrams per case.
func TestUDPEchoStrategies(t *testing.T) {
	testutil.Watchdog(t, 10*time.Minute)
	const count = 1000
	for _, o := range testutil.Strategies() {
		for _, tc := range []struct {
			network   string
			connected bool
		}{{"udp4", true}, {"udp6", false}} {
			t.Run(o.String()+"/"+tc.network, func(t *testing.T) {
				testutil.CheckLeaks(t)
				p := testutil.NewPoller(t, o)
				run := udpEchoOn(&gatenet.ListenConfig{Poller: p}, &gatenet.Dialer{Poller: p})
				st := run.run(t, tc.network, tc.connected, count)
				require.Equal(t, count, st.Datagrams)
				st.log(t, o.String()+" "+tc.network)
			})
		}
	}
}

// TestUDPEchoLossy: the server drops the first copy of every 50th
// datagram and echoes every 70th twice; the client resends and discards
// until all 2,000 are verified.
func TestUDPEchoLossy(t *testing.T) {
	testutil.Watchdog(t, 10*time.Minute)
	const count = 2000
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			testutil.CheckLeaks(t)
			run := udpEchoGatenet
			run.lossy = true
			st := run.run(t, network, network == "udp4", count)
			require.Equal(t, count, st.Datagrams)
			require.GreaterOrEqual(t, st.Retransmits, count/50, "every dropped datagram was resent")
			require.GreaterOrEqual(t, st.Stale, count/70, "every duplicate echo was discarded")
			st.log(t, "lossy "+network)
		})
	}
}

const udpEchoSize = 512

// BenchmarkUDPEcho512: the loop sends a 512-byte datagram from one
// unconnected UDP socket to another, an echo goroutine sends it back, the
// loop reads it. One iteration is one round trip (two datagrams).
func BenchmarkUDPEcho512(b *testing.B) {
	for _, s := range []udpStack{udpNetStack, udpGatenetStack} {
		b.Run(s.Name, func(b *testing.B) { benchUDPEcho(b, s) })
	}
}

func benchUDPEcho(b *testing.B, s udpStack) {
	testutil.CheckLeaks(b)
	srv := udpListen(b, s, "udp4", "127.0.0.1:0")
	cli := udpListen(b, s, "udp4", "127.0.0.1:0")
	srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()

	echoDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 2*udpEchoSize)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil // the benchmark is over
				}
				echoDone <- err
				return
			}
			if _, err := srv.WriteToUDPAddrPort(buf[:n], from); err != nil {
				echoDone <- err
				return
			}
		}
	}()

	msg := make([]byte, udpEchoSize)
	for i := range msg {
		msg[i] = byte(i)
	}
	reply := make([]byte, 2*udpEchoSize)

	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos(b)
	for range b.N {
		if _, err := cli.WriteToUDPAddrPort(msg, srvAddr); err != nil {
			b.Fatalf("write: %v", err) // the cleanup's close ends the echo goroutine
		}
		n, from, err := cli.ReadFromUDPAddrPort(reply)
		if err != nil {
			b.Fatalf("read: %v", err)
		}
		if n != udpEchoSize || from != srvAddr {
			b.Fatalf("read %d bytes from %v, want %d from %v", n, from, udpEchoSize, srvAddr)
		}
	}
	cpu1 := cpuNanos(b)
	b.StopTimer()

	b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "dgrams/s")
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/rt")

	if err := srv.Close(); err != nil {
		b.Errorf("closing the server: %v", err)
	}
	if err := <-echoDone; err != nil {
		b.Errorf("echo: %v", err)
	}
}
