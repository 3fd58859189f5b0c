//go:build linux

package reliability_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Real network conditions: two network namespaces, "a" (10.213.0.1) and
// "b" (10.213.0.2), private addresses that exist only inside them, joined
// by a link that delays, loses and reorders packets like
//
//	tc qdisc add dev <link> root netem delay 5ms 2ms loss 1% reorder 5%
//
// on both ends. Where the kernel has sch_netem the link is a veth with that
// qdisc (mode "netem"); where it does not (this CI image), it is two TUN
// devices and a user-space netem in the test process (mode "tun",
// tunlink_test.go); GATENET_NETEM=tun forces the latter. Only without
// either does a plain veth run, unimpaired, saying so (mode "plain"). The
// test process stays in its own namespace: a socket keeps the namespace it
// was created in, so each listener and dialer is created on a locked OS
// thread switched into its namespace with setns(2) (inNetns), with no cgo
// and no child process.
//
// Needs root, network namespaces and iproute2 (ip; tc for the kernel
// path); skips, saying which, otherwise. Every namespace is deleted when
// its test ends, failed or not.

const (
	netemAddrA = "10.213.0.1"
	netemAddrB = "10.213.0.2"
	netemQdisc = "netem delay 5ms 2ms loss 1% reorder 5%"
)

var netnsSeq atomic.Int32

// netnsPair is two namespaces and the link between them.
type netnsPair struct {
	id     string    // unique to the pair, in its names
	a, b   string    // namespace names
	la, lb string    // the link's ends, in a and in b
	mode   string    // "netem", "tun" or "plain" (unimpaired)
	relay  *tunRelay // the user-space netem, in mode "tun"
}

func ipCmd(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// newNetnsPair creates the namespaces and the link, or skips t.
func newNetnsPair(t *testing.T) *netnsPair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netem: needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("netem: ip (iproute2) not installed: apt-get install -y iproute2")
	}
	n := netnsSeq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	p := &netnsPair{id: id, a: "gatenet-" + id + "a", b: "gatenet-" + id + "b"}
	if err := ipCmd("netns", "add", p.a); err != nil {
		t.Skipf("netem: network namespaces unavailable: %v", err)
	}
	t.Cleanup(func() { ipCmd("netns", "del", p.a) })
	if err := ipCmd("netns", "add", p.b); err != nil {
		t.Skipf("netem: network namespaces unavailable: %v", err)
	}
	t.Cleanup(func() { ipCmd("netns", "del", p.b) })

	why := "GATENET_NETEM=tun"
	if os.Getenv("GATENET_NETEM") != "tun" {
		why = p.vethNetem(t)
		if why == "" {
			return p
		}
	}
	t.Logf("kernel netem not used (%s): trying the user-space netem over tun", why)
	p.la, p.lb = "gnt"+id+"a", "gnt"+id+"b"
	r, err := newTunLink(t, p)
	if err == nil {
		p.mode, p.relay = "tun", r
		return p
	}
	p.la, p.lb = "gnv"+id+"a", "gnv"+id+"b"
	t.Logf("tun unavailable too (%v): running over a plain veth, without delay, loss or reordering", err)
	p.veth(t)
	p.mode = "plain"
	return p
}

// veth joins a and b by a veth pair with the addresses, up.
func (p *netnsPair) veth(t *testing.T) {
	t.Helper()
	if err := ipCmd("link", "add", p.la, "netns", p.a, "type", "veth", "peer", "name", p.lb, "netns", p.b); err != nil {
		t.Skipf("netem: cannot create a veth pair: %v", err)
	}
	for _, c := range [][]string{
		{"-n", p.a, "addr", "add", netemAddrA + "/30", "dev", p.la},
		{"-n", p.b, "addr", "add", netemAddrB + "/30", "dev", p.lb},
		{"-n", p.a, "link", "set", p.la, "up"},
		{"-n", p.b, "link", "set", p.lb, "up"},
	} {
		require.NoError(t, ipCmd(c...))
	}
}

// vethNetem sets up the kernel path, a veth with netem on both ends, and
// returns "", or undoes it and returns why it is unavailable.
func (p *netnsPair) vethNetem(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("tc"); err != nil {
		return "tc (iproute2) not installed"
	}
	p.la, p.lb = "gnv"+p.id+"a", "gnv"+p.id+"b"
	p.veth(t)
	for _, side := range [][2]string{{p.a, p.la}, {p.b, p.lb}} {
		args := append([]string{"-n", side[0], "qdisc", "add", "dev", side[1], "root"}, strings.Fields(netemQdisc)...)
		out, err := exec.Command("tc", args...).CombinedOutput()
		if err != nil {
			require.NoError(t, ipCmd("-n", p.a, "link", "del", p.la)) // both ends
			return fmt.Sprintf("tc %s: %v: %s; the kernel lacks CONFIG_NET_SCH_NETEM?", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	p.mode = "netem"
	t.Logf("kernel netem on veth %s/%s: %s", p.la, p.lb, netemQdisc)
	return ""
}

// inNetns runs f on a locked OS thread switched into namespace ns. Sockets
// f creates belong to ns for their lifetime; the thread is switched back
// before it is unlocked (or, if that fails, exits with its goroutine).
func inNetns(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns back: %w (the thread exits locked)", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// connect returns a gatenet conn from namespace b (client) to a listener in
// namespace a, and the accepted conn (server, in a).
func (p *netnsPair) connect(t *testing.T) (client, server *gatenet.TCPConn) {
	t.Helper()
	var ln net.Listener
	require.NoError(t, inNetns(p.a, func() (err error) {
		ln, err = gatenet.Listen("tcp4", netemAddrA+":0")
		return err
	}))
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	var c net.Conn
	err := inNetns(p.b, func() (err error) {
		d := gatenet.Dialer{Timeout: 30 * time.Second}
		c, err = d.Dial("tcp4", ln.Addr().String())
		return err
	})
	if err != nil {
		ln.Close()
		<-accepted
		require.NoError(t, err)
	}
	s := <-accepted
	if s == nil {
		c.Close()
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	require.Equal(t, netemAddrB, c.LocalAddr().(*net.TCPAddr).IP.String())
	return c.(*gatenet.TCPConn), s.(*gatenet.TCPConn)
}

// TestNetemTransfer: 64 MiB through the emulated link, gatenet at both
// ends, arrives intact (SHA-256); ~6 s over the tun relay under -race
// (1% loss at ~10 ms RTT). Over the relay, packets must have been lost and
// reordered on the way, so the test cannot pass over an unimpaired link.
func TestNetemTransfer(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	p := newNetnsPair(t)
	const size = 64 << 20
	c, s := p.connect(t)
	// A bound on a stall, not on the transfer's speed.
	require.NoError(t, c.SetDeadline(time.Now().Add(2*time.Minute)))
	require.NoError(t, s.SetDeadline(time.Now().Add(2*time.Minute)))

	data := make([]byte, size)
	rand.Read(data)
	want := sha256.Sum256(data)
	start := time.Now()
	werr := make(chan error, 1)
	go func() {
		// Uneven writes, so segment boundaries never line up.
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := min(len(rest), 1+(i*7919)%(256<<10))
			if _, err := s.Write(rest[:n]); err != nil {
				werr <- err
				return
			}
			rest = rest[n:]
		}
		werr <- s.CloseWrite()
	}()
	h := sha256.New()
	n, err := io.CopyBuffer(h, struct{ io.Reader }{c}, make([]byte, 48<<10))
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, int64(size), n)
	require.Equal(t, want[:], h.Sum(nil), "the data arrived corrupted")
	d := time.Since(start)
	t.Logf("%d MiB in %v (%.1f MB/s), link %s", size>>20, d.Round(time.Millisecond), float64(size)/d.Seconds()/1e6, p.mode)
	if p.relay != nil {
		st := p.relay.stats()
		t.Logf("relay, both ways: %v", st)
		require.Positive(t, st.Lost, "no packet was lost: the link is not impaired")
		require.Positive(t, st.Reordered, "no packet was reordered: the link is not impaired")
	}
}

// TestNetemDeadlines: across the emulated link a read deadline fires with
// os.ErrDeadlineExceeded, not before it; a writer whose peer stops reading
// fills the path and its write deadline fires the same way. Upper bounds
// are the watchdog's only.
func TestNetemDeadlines(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	p := newNetnsPair(t)
	c, s := p.connect(t)

	// Traffic first, so the deadline is set on a conn in use.
	_, err := s.Write([]byte("hello"))
	require.NoError(t, err)
	buf := make([]byte, 5)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)

	const wait = 300 * time.Millisecond
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(start.Add(wait)))
	_, err = c.Read(buf)
	took := time.Since(start)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.GreaterOrEqual(t, took, wait, "the read deadline fired early")
	t.Logf("read deadline %v fired after %v", wait, took.Round(time.Millisecond))

	// s keeps writing; c never reads.
	require.NoError(t, s.SetWriteBuffer(64<<10))
	start = time.Now()
	require.NoError(t, s.SetWriteDeadline(start.Add(wait)))
	big := make([]byte, 64<<20)
	n, err := s.Write(big)
	took = time.Since(start)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.GreaterOrEqual(t, took, wait, "the write deadline fired early")
	require.Less(t, n, len(big))
	t.Logf("write deadline %v fired after %v, %d bytes written", wait, took.Round(time.Millisecond), n)
}

// userTimeout bounds how long the kernel keeps unacknowledged data (and
// unanswered keep-alive probes) before failing the connection with
// ETIMEDOUT: TCP_USER_TIMEOUT 2 s, keep-alive after 1 s idle, every 1 s.
// Without them a TCP connection whose peer vanished silently waits out
// ~15 minutes of retransmissions (tcp_retries2), or forever when idle.
func userTimeout(t *testing.T, c *gatenet.TCPConn) {
	t.Helper()
	require.NoError(t, c.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 2}))
	testutil.SetsockoptInt(t, c, unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 2000)
}

// TestNetemPeerVanishes: mid-transfer the peer's namespace is deleted and
// the link with it (vanish), so the peer disappears without a FIN or RST.
// The namespace itself lives on while this process holds sockets in it;
// cutting the link is what cuts the path. The survivor's blocked call, a
// Write (it was sending) or a Read (it was receiving), must return an
// error (ETIMEDOUT, ENETUNREACH, …) through
// TCP_USER_TIMEOUT and keep-alive (userTimeout), within a generous bound:
// not hang.
func TestNetemPeerVanishes(t *testing.T) {
	for _, survivor := range []string{"writing", "reading"} {
		t.Run("survivor-"+survivor, func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 2*time.Minute)
			p := newNetnsPair(t)
			peer, surv := p.connect(t) // peer in b (deleted), survivor in a
			userTimeout(t, surv)
			userTimeout(t, peer)

			var progress atomic.Int64
			survErr := make(chan error, 1)
			var peerDone sync.WaitGroup
			buf := make([]byte, 64<<10)
			if survivor == "writing" {
				// The peer drains (counting) until it is cut off.
				peerDone.Add(1)
				go func() {
					defer peerDone.Done()
					b := make([]byte, 64<<10)
					for {
						n, err := peer.Read(b)
						progress.Add(int64(n))
						if err != nil {
							return
						}
					}
				}()
				go func() {
					for {
						if _, err := surv.Write(buf); err != nil {
							survErr <- err
							return
						}
					}
				}()
			} else {
				peerDone.Add(1)
				go func() {
					defer peerDone.Done()
					for {
						if _, err := peer.Write(buf); err != nil {
							return
						}
					}
				}()
				go func() {
					b := make([]byte, 64<<10)
					for {
						n, err := surv.Read(b)
						progress.Add(int64(n))
						if err != nil {
							survErr <- err
							return
						}
					}
				}()
			}
			// Mid-transfer: some data has gone through.
			for progress.Load() < 1<<20 {
				select {
				case err := <-survErr:
					t.Fatalf("the survivor failed before the cut: %v", err)
				case <-time.After(5 * time.Millisecond):
				}
			}
			cut := time.Now()
			p.vanish(t)

			var err error
			select {
			case err = <-survErr:
			case <-time.After(90 * time.Second):
				t.Fatalf("the survivor is still %s 90 s after its peer vanished", survivor)
			}
			took := time.Since(cut)
			require.Error(t, err)
			require.NotErrorIs(t, err, os.ErrDeadlineExceeded)
			var oe *net.OpError
			require.True(t, errors.As(err, &oe) || errors.Is(err, io.EOF), "an *net.OpError or EOF: %#v", err)
			t.Logf("survivor %s: %s after %v (%d bytes moved before the cut)", survivor, errClass(err), took.Round(time.Millisecond), progress.Load())
			peer.Close() // unblocks the peer's own pending call
			peerDone.Wait()
		})
	}
}

// vanish deletes namespace b and the link, so the peer in b disappears
// without a FIN or RST. With a veth, deleting its end in a cuts the path
// (b itself lives on while this process holds sockets in it). With the
// tun relay, the relay is cut first (a blackhole both ways: nothing of b
// gets through, even if a device outlives its deletion while the relay
// holds its descriptor), then b's tun, b, and a's tun are deleted.
func (p *netnsPair) vanish(t *testing.T) {
	t.Helper()
	if p.relay == nil {
		require.NoError(t, ipCmd("netns", "del", p.b))
		require.NoError(t, ipCmd("-n", p.a, "link", "del", p.la))
		return
	}
	p.relay.cut()
	require.NoError(t, ipCmd("-n", p.b, "link", "del", p.lb))
	require.NoError(t, ipCmd("netns", "del", p.b))
	require.NoError(t, ipCmd("-n", p.a, "link", "del", p.la))
}
