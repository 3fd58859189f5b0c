//go:build linux

package gatenet_test

// Once receive offload is on (a ReadBatch turned it on), every read
// method still behaves as net's: contexts, closed checks, control
// messages, batch lengths and senders, and WriteBatch's partial batches.

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// groOn turns receive offload on for c: a ReadBatch with nothing queued.
func groOn(t *testing.T, c *gatenet.UDPConn) {
	t.Helper()
	_, err := c.ReadBatch(batchMessages(1, 16), unix.MSG_DONTWAIT)
	require.ErrorIs(t, err, unix.EAGAIN)
	require.Equal(t, 1, groOption(t, c))
}

// groOption is c's UDP_GRO socket option.
func groOption(t *testing.T, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var v int
	var gerr error
	require.NoError(t, rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO) }))
	require.NoError(t, gerr)
	return v
}

// parkedReadBatch is a GRO-on pair whose rx has a ReadBatch of its own
// parked (most runs: it may not have parked yet), which reports on batch.
func parkedReadBatch(t *testing.T) (rx, tx *gatenet.UDPConn, batch <-chan error) {
	t.Helper()
	testutil.CheckLeaks(t)
	rx, tx = listenUDPPair(t)
	groOn(t, rx)
	ch := make(chan error, 1)
	go func() { _, err := rx.ReadBatch(batchMessages(4, 64), 0); ch <- err }()
	return rx, tx, ch
}

// TestUDPGROContextNotHeldByReadBatch: a ReadContext or WaitRead whose
// context ends while a ReadBatch is parked on the same socket returns
// with the context's error; it waited for the ReadBatch before.
func TestUDPGROContextNotHeldByReadBatch(t *testing.T) {
	rx, tx, batch := parkedReadBatch(t)
	for _, op := range []string{"ReadContext", "WaitRead"} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		done := make(chan error, 1)
		go func() {
			var err error
			if op == "ReadContext" {
				_, err = rx.ReadContext(ctx, make([]byte, 64))
			} else {
				err = rx.WaitRead(ctx)
			}
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.DeadlineExceeded, op)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: still waiting 10 s after its context ended", op)
		}
		cancel()
	}
	_, err := tx.WriteTo([]byte("x"), rx.LocalAddr())
	require.NoError(t, err)
	require.NoError(t, <-batch)
}

// TestUDPGROContextNotHeldByAnotherReader: with a ReadBatch parked and a
// first ReadContext waiting behind it, a second ReadContext whose context
// ends returns with the context's error; it waited for the first before.
func TestUDPGROContextNotHeldByAnotherReader(t *testing.T) {
	rx, _, batch := parkedReadBatch(t)
	first := make(chan error, 1)
	go func() { // waits for the ReadBatch, its context never done
		_, err := rx.ReadContext(context.Background(), make([]byte, 64))
		first <- err
	}()
	time.Sleep(50 * time.Millisecond) // both parked, most runs: not needed to pass
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		_, err := rx.ReadContext(ctx, make([]byte, 64))
		second <- err
	}()
	select {
	case err := <-second:
		require.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting 10 s after its context ended")
	}
	require.NoError(t, rx.Close()) // ends the other two
	require.ErrorIs(t, <-batch, net.ErrClosed)
	require.ErrorIs(t, <-first, net.ErrClosed)
}

// TestUDPGROControlMessagesAsNet: with IP_PKTINFO on, an OOB buffer of
// exactly CMSG_LEN bytes gets the whole message and a shorter one a
// truncated one, with the same oobn and flags as net's recvmsg(2).
func TestUDPGROControlMessagesAsNet(t *testing.T) {
	testutil.CheckLeaks(t)
	pktinfo := func(c syscall.Conn) {
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) {
			require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_PKTINFO, 1))
		}))
	}
	type result struct{ n, oobn, flags int }
	read := func(c interface {
		ReadMsgUDP(b, oob []byte) (int, int, int, *net.UDPAddr, error)
		LocalAddr() net.Addr
	}, size int) result {
		tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer tx.Close()
		_, err = tx.WriteTo([]byte("hello"), c.LocalAddr())
		require.NoError(t, err)
		n, oobn, flags, _, err := c.ReadMsgUDP(make([]byte, 16), make([]byte, size))
		require.NoError(t, err)
		return result{n, oobn, flags}
	}
	exact := unix.CmsgLen(unix.SizeofInet4Pktinfo)
	for _, size := range []int{exact, exact - 8, unix.CmsgSpace(unix.SizeofInet4Pktinfo)} {
		nc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		pktinfo(nc)
		want := read(nc, size)
		nc.Close()
		gc, err := gatenet.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		pktinfo(gc)
		groOn(t, gc)
		require.Equal(t, want, read(gc, size), "an OOB buffer of %d bytes", size)
		gc.Close()
	}
}

// TestUDPGROBatchAsLongAsQueued: ReadBatch returns as many queued
// datagrams as ms has room for, as x/net's does: past the trains one
// recvmmsg(2) takes.
func TestUDPGROBatchAsLongAsQueued(t *testing.T) {
	testutil.CheckLeaks(t)
	rx, tx := listenUDPPair(t)
	groOn(t, rx)
	for i := range 20 {
		_, err := tx.WriteTo([]byte{byte(i)}, rx.LocalAddr())
		require.NoError(t, err)
	}
	ms := batchMessages(32, 16)
	n, err := rx.ReadBatch(ms, 0)
	require.NoError(t, err)
	require.Equal(t, 20, n)
	for i := range n {
		require.Equal(t, []byte{byte(i)}, ms[i].Buffers[0][:ms[i].N])
	}
	// Separate datagrams do not share their sender's *net.UDPAddr.
	require.NotSame(t, ms[0].Addr, ms[1].Addr)
	require.Equal(t, ms[0].Addr, ms[1].Addr)
}

// TestUDPGROReadZeroLengthClosed: a zero-length Read on a closed conn
// fails with net.ErrClosed, as net's does (the closed check comes first).
func TestUDPGROReadZeroLengthClosed(t *testing.T) {
	testutil.CheckLeaks(t)
	rx, tx := listenUDPPair(t)
	c, err := gatenet.DialUDP("udp4", nil, rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	groOn(t, c)
	n, err := c.Read(nil)
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, c.Close())
	_, err = c.Read(nil)
	require.ErrorIs(t, err, net.ErrClosed)
	_ = tx
}

// TestUDPWriteBatch: WriteBatch leaves receive offload off (reads stay
// as net's until a ReadBatch), and a destination it cannot convert after
// the first message ends the batch short, with what went before it sent,
// as x/net's does.
func TestUDPWriteBatch(t *testing.T) {
	testutil.CheckLeaks(t)
	rx, tx := listenUDPPair(t)
	ms := []ipv4.Message{
		{Buffers: [][]byte{[]byte("one")}, Addr: rx.LocalAddr()},
		{Buffers: [][]byte{[]byte("two")}, Addr: &net.UDPAddr{IP: net.IPv6loopback, Port: 9}},
		{Buffers: [][]byte{[]byte("three")}, Addr: rx.LocalAddr()},
	}
	n, err := tx.WriteBatch(ms, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Zero(t, groOption(t, tx))
	b := make([]byte, 16)
	k, _, err := rx.ReadFrom(b)
	require.NoError(t, err)
	require.Equal(t, "one", string(b[:k]))
	_, err = tx.WriteBatch(ms[1:], 0)
	var ae *net.AddrError
	require.True(t, errors.As(err, &ae), "%v", err)
}

// TestUDPGROFileConnCutsTrains: a socket handed over with UDP_GRO on (the
// File of a conn that ran a ReadBatch) still reads datagram by datagram
// through FilePacketConn and FileConn: a train sent to it is cut. Before,
// the new conn returned the train as one datagram.
func TestUDPGROFileConnCutsTrains(t *testing.T) {
	testutil.CheckLeaks(t)
	for name, fromFile := range map[string]func(*os.File) (net.Conn, error){
		"FilePacketConn": func(f *os.File) (net.Conn, error) {
			c, err := gatenet.FilePacketConn(f)
			if err != nil {
				return nil, err
			}
			return c.(net.Conn), nil
		},
		"FileConn": gatenet.FileConn,
	} {
		t.Run(name, func(t *testing.T) {
			rx, tx := listenUDPPair(t)
			groOn(t, rx)
			f, err := rx.File()
			require.NoError(t, err)
			c, err := fromFile(f)
			require.NoError(t, f.Close())
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, rx.Close())
			require.Equal(t, 1, groOption(t, c.(syscall.Conn)))

			payload := trainPayload(5*100, 100)
			_, _, err = tx.WriteMsgUDP(payload, gsoOOB(100), c.LocalAddr().(*net.UDPAddr))
			require.NoError(t, err)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			b := make([]byte, 1000)
			for i := range 5 {
				n, _, err := c.(net.PacketConn).ReadFrom(b)
				require.NoError(t, err)
				require.Equal(t, 100, n, "datagram %d: a train returned whole", i)
				require.Equal(t, payload[i*100:(i+1)*100], b[:n], "datagram %d", i)
			}
		})
	}
}

// TestUDPGROSetByCallerAsXNet: a caller that turned UDP_GRO on itself
// (SyscallConn) reads the trains whole, with UDP_GRO's control message,
// from ReadBatch as from x/net's on net's conn, and from ReadMsgUDP after
// it. Before, the first ReadBatch took the trains over and cut them.
func TestUDPGROSetByCallerAsXNet(t *testing.T) {
	testutil.CheckLeaks(t)
	g, s, tx := udp4Trio(t)
	for _, c := range []syscall.Conn{g, s} {
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		var serr error
		require.NoError(t, rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) }))
		require.NoError(t, serr)
	}
	for range 2 { // three datagrams of 40 bytes, sent as one, twice
		for _, to := range []*net.UDPAddr{g.LocalAddr().(*net.UDPAddr), s.LocalAddr().(*net.UDPAddr)} {
			_, _, err := tx.WriteMsgUDP(trainPayload(120, 40), gsoOOB(40), to)
			require.NoError(t, err)
		}
	}
	want := batchResult(ipv4.NewPacketConn(s), 2, 1024, unix.MSG_DONTWAIT|unix.MSG_WAITFORONE)
	got := batchResult(g, 2, 1024, unix.MSG_DONTWAIT|unix.MSG_WAITFORONE)
	require.True(t, strings.HasPrefix(want, "2 "), want) // loopback sends are queued on return
	require.Contains(t, want, "N=120")
	require.Equal(t, want, got)
	require.Equal(t, 1, groOption(t, g))

	// ReadMsgUDP after the ReadBatch: a train whole too, as net's.
	readMsg := func(c interface {
		SetReadDeadline(time.Time) error
		ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
		LocalAddr() net.Addr
	}) []int {
		_, _, err := tx.WriteMsgUDP(trainPayload(120, 40), gsoOOB(40), c.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute)))
		n, oobn, flags, _, err := c.ReadMsgUDP(make([]byte, 1024), make([]byte, 128))
		require.NoError(t, err)
		return []int{n, oobn, flags}
	}
	want2 := readMsg(s)
	require.Equal(t, 120, want2[0])
	require.Equal(t, want2, readMsg(g))
}
