//go:build linux

package gatenet_test

// ReadBatch and WriteBatch (recvmmsg, sendmmsg) and receive offload: a
// train sent with UDP_SEGMENT reaches every read method as the
// datagrams it was made of, in order, byte for byte.

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
)

// gsoOOB is the control message that sends b as a train of segment-byte
// datagrams (UDP_SEGMENT, udp(7)).
func gsoOOB(segment uint16) []byte {
	oob := make([]byte, unix.CmsgSpace(2))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level, h.Type = unix.IPPROTO_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&oob[unix.CmsgLen(0)])) = segment
	return oob
}

// trainPayload is n bytes where datagram i of a train of segment-byte
// datagrams starts with i and every byte says where it is.
func trainPayload(n, segment int) []byte {
	p := make([]byte, n)
	for j := range p {
		p[j] = byte(j/segment*31 + j%segment)
	}
	return p
}

func batchMessages(n, size int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, size)}
		ms[i].OOB = make([]byte, 128)
	}
	return ms
}

func listenUDPPair(t *testing.T) (rx, tx *gatenet.UDPConn) {
	return listenUDPPairOn(t, "udp4", net.IPv4(127, 0, 0, 1))
}

func listenUDPPairOn(t *testing.T, network string, ip net.IP) (rx, tx *gatenet.UDPConn) {
	t.Helper()
	rx, err := gatenet.ListenUDP(network, &net.UDPAddr{IP: ip})
	require.NoError(t, err)
	t.Cleanup(func() { rx.Close() })
	tx, err = gatenet.ListenUDP(network, &net.UDPAddr{IP: ip})
	require.NoError(t, err)
	t.Cleanup(func() { tx.Close() })
	return rx, tx
}

// inq is the bytes the kernel has queued for c, a datagram socket
// (SIOCINQ: the next datagram's, or train's, size).
func inq(t *testing.T, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var n int
	var ierr error
	require.NoError(t, rc.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCINQ) }))
	require.NoError(t, ierr)
	return n
}

func TestUDPBatchRoundTrip(t *testing.T) {
	rx, tx := listenUDPPair(t)
	out := make([]ipv4.Message, 5)
	for i := range out {
		out[i].Buffers = [][]byte{[]byte("part-"), {byte('a' + i)}}
		out[i].Addr = rx.LocalAddr()
	}
	n, err := tx.WriteBatch(out, 0)
	require.NoError(t, err)
	require.Equal(t, 5, n)
	for i := range out {
		require.Equal(t, 6, out[i].N)
	}

	in := batchMessages(8, 64)
	got := 0
	for got < 5 {
		n, err := rx.ReadBatch(in[got:], 0)
		require.NoError(t, err)
		got += n
	}
	for i := range 5 {
		require.Equal(t, "part-"+string(rune('a'+i)), string(in[i].Buffers[0][:in[i].N]))
		require.Equal(t, tx.LocalAddr().String(), in[i].Addr.String())
		require.Zero(t, in[i].Flags)
	}
}

// TestUDPBatchMatchesXNet reads the same datagrams with gatenet's
// ReadBatch and with x/net's on a *net.UDPConn: the same N, Flags and
// sender.
func TestUDPBatchMatchesXNet(t *testing.T) {
	g, s, tx := udp4Trio(t)
	for _, size := range []int{0, 1, 100, 300} { // 300: truncated into 200-byte buffers
		for _, to := range []net.Addr{g.LocalAddr(), s.LocalAddr()} {
			_, err := tx.WriteTo(bytes.Repeat([]byte{7}, size), to)
			require.NoError(t, err)
		}
	}
	read := func(r interface {
		ReadBatch([]ipv4.Message, int) (int, error)
	}) []ipv4.Message {
		ms := batchMessages(4, 200)
		for got := 0; got < 4; {
			n, err := r.ReadBatch(ms[got:], 0)
			require.NoError(t, err)
			got += n
		}
		return ms
	}
	gm, sm := read(g), read(ipv4.NewPacketConn(s))
	for i := range gm {
		require.Equal(t, sm[i].N, gm[i].N, "datagram %d", i)
		require.Equal(t, sm[i].Flags, gm[i].Flags, "datagram %d", i)
		require.Equal(t, sm[i].Addr.String(), gm[i].Addr.String(), "datagram %d", i)
	}
	require.Equal(t, unix.MSG_TRUNC, gm[3].Flags)
}

func TestUDPBatchGROSplitsTrains(t *testing.T) {
	t.Run("udp4", func(t *testing.T) { testGROSplitsTrains(t, "udp4", net.IPv4(127, 0, 0, 1)) })
	t.Run("udp6", func(t *testing.T) { testGROSplitsTrains(t, "udp6", net.IPv6loopback) })
}

func testGROSplitsTrains(t *testing.T, network string, ip net.IP) {
	rx, tx := listenUDPPairOn(t, network, ip)
	const segment, size = 1200, 1200*10 + 500 // 11 datagrams, the last short
	payload := trainPayload(size, segment)

	in := batchMessages(4, 1500)
	// The first ReadBatch turns GRO on; nothing is queued yet.
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err := rx.ReadBatch(in, 0)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, rx.SetReadDeadline(time.Time{}))

	_, _, err = tx.WriteMsgUDP(payload, gsoOOB(segment), rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)

	var got [][]byte
	n, err := rx.ReadBatch(in, 0)
	require.NoError(t, err)
	require.Equal(t, 4, n)
	for i := range n {
		got = append(got, bytes.Clone(in[i].Buffers[0][:in[i].N]))
		require.Equal(t, tx.LocalAddr().String(), in[i].Addr.String())
	}
	// The train left the kernel's queue whole: what is left of it is held.
	require.Zero(t, inq(t, rx), "the train was queued cut: GRO is off")

	// Every read method takes the next datagram of the held train.
	require.NoError(t, rx.WaitRead(context.Background()))
	b := make([]byte, 1500)
	k, addr, err := rx.ReadFromUDP(b)
	require.NoError(t, err)
	require.Equal(t, tx.LocalAddr().String(), addr.String())
	got = append(got, bytes.Clone(b[:k]))
	k, ap, err := rx.ReadFromUDPAddrPort(b)
	require.NoError(t, err)
	require.Equal(t, tx.LocalAddr().String(), ap.String())
	got = append(got, bytes.Clone(b[:k]))
	k, oobn, flags, _, err := rx.ReadMsgUDP(b, make([]byte, 64))
	require.NoError(t, err)
	require.Zero(t, oobn, "UDP_GRO's control message reached the caller")
	require.Zero(t, flags)
	got = append(got, bytes.Clone(b[:k]))
	k, err = rx.ReadContext(context.Background(), b)
	require.NoError(t, err)
	got = append(got, bytes.Clone(b[:k]))
	k, err = rx.Read(b)
	require.NoError(t, err)
	got = append(got, bytes.Clone(b[:k]))
	for len(got) < 11 {
		n, err := rx.ReadBatch(in, 0)
		require.NoError(t, err)
		for i := range n {
			got = append(got, bytes.Clone(in[i].Buffers[0][:in[i].N]))
		}
	}
	require.Len(t, got, 11)
	for i, d := range got {
		end := min((i+1)*segment, size)
		require.Equal(t, payload[i*segment:end], d, "datagram %d", i)
	}

	// Nothing held now: a read waits for the kernel again.
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = rx.ReadBatch(in, 0)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)

	// A failed ReadMsgUDP reports the family's zero address and, as net's
	// does and as without GRO, n == -1 once recvmsg(2) was made (the
	// deadline passed during the wait), 0 when it failed before (a
	// deadline already past).
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	k, _, _, addr, err = rx.ReadMsgUDP(b, nil)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Equal(t, -1, k)
	require.True(t, addr.IP.IsUnspecified(), "%v", addr)
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(-time.Second)))
	k, _, _, addr, err = rx.ReadMsgUDP(b, nil)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Zero(t, k)
	require.True(t, addr.IP.IsUnspecified(), "%v", addr)
}

// TestUDPBatchGROHeldKeepSemantics: held datagrams obey the deadline,
// Close, truncation and control messages as queued ones do.
func TestUDPBatchGROHeldKeepSemantics(t *testing.T) {
	rx, tx := listenUDPPair(t)
	rc, err := rx.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) {
		require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1))
	}))
	in := batchMessages(2, 1000)
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(-time.Second)))
	rx.ReadBatch(in, 0) // GRO on
	require.NoError(t, rx.SetReadDeadline(time.Time{}))

	const segment = 1400
	payload := trainPayload(segment*6, segment)
	_, _, err = tx.WriteMsgUDP(payload, gsoOOB(segment), rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)

	n, err := rx.ReadBatch(in, 0)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for i := range n {
		require.Equal(t, 1000, in[i].N)
		require.Equal(t, unix.MSG_TRUNC, in[i].Flags, "a 1400-byte datagram in a 1000-byte buffer")
		require.Equal(t, payload[i*segment:i*segment+1000], in[i].Buffers[0])
		cm, err := unix.ParseSocketControlMessage(in[i].OOB[:in[i].NN])
		require.NoError(t, err)
		require.Len(t, cm, 1, "only IP_TOS: UDP_GRO's is this package's")
		require.Equal(t, int32(unix.IP_TOS), cm[0].Header.Type)
	}
	// A control buffer too small for IP_TOS: MSG_CTRUNC, as the kernel's.
	small := []ipv4.Message{{Buffers: [][]byte{make([]byte, 1500)}, OOB: make([]byte, 4)}}
	n, err = rx.ReadBatch(small, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, segment, small[0].N)
	require.Zero(t, small[0].NN)
	require.Equal(t, unix.MSG_CTRUNC, small[0].Flags)

	// A peek hands out the next held datagram, in every message, as the
	// kernel's recvmmsg(2) peeks its next one, and leaves it held.
	n, err = rx.ReadBatch(in, unix.MSG_PEEK)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for i := range n {
		require.Equal(t, payload[3*segment:3*segment+1000], in[i].Buffers[0])
	}

	// Three are held: a passed deadline still refuses them.
	require.NoError(t, rx.WaitRead(context.Background()))
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(-time.Second)))
	_, err = rx.ReadBatch(in, 0)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.ErrorIs(t, rx.WaitRead(context.Background()), os.ErrDeadlineExceeded)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "read", op.Op)
	require.NoError(t, rx.SetReadDeadline(time.Time{}))
	require.NoError(t, rx.Close())
	_, err = rx.ReadBatch(in, 0)
	require.ErrorIs(t, err, net.ErrClosed)
	_, _, err = rx.ReadFromUDP(make([]byte, 10))
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, rx.WaitRead(context.Background()), net.ErrClosed)
}

// TestUDPBatchGROTrainsMixed: trains and lone datagrams from two senders
// interleave in arrival order, and each datagram carries its sender.
func TestUDPBatchGROTrainsMixed(t *testing.T) {
	rx, tx := listenUDPPair(t)
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer other.Close()
	in := batchMessages(16, 2000)
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(-time.Second)))
	rx.ReadBatch(in, 0)
	require.NoError(t, rx.SetReadDeadline(time.Time{}))

	to := rx.LocalAddr().(*net.UDPAddr)
	type want struct {
		from string
		data []byte
	}
	var wants []want
	for round := range 20 {
		seg := 100 + round*50
		p := trainPayload(seg*3+round, seg)
		_, _, err := tx.WriteMsgUDP(p, gsoOOB(uint16(seg)), to)
		require.NoError(t, err)
		for i := 0; i < len(p); i += seg {
			wants = append(wants, want{tx.LocalAddr().String(), p[i:min(i+seg, len(p))]})
		}
		lone := []byte{byte(round)}
		_, err = other.WriteToUDP(lone, to)
		require.NoError(t, err)
		wants = append(wants, want{other.LocalAddr().String(), lone})
		_, err = other.WriteToUDP(nil, to) // a zero-length datagram
		require.NoError(t, err)
		wants = append(wants, want{other.LocalAddr().String(), []byte{}})
	}
	for i := 0; i < len(wants); {
		n, err := rx.ReadBatch(in, 0)
		require.NoError(t, err)
		for j := range n {
			require.Equal(t, wants[i].from, in[j].Addr.String(), "datagram %d", i)
			require.Equal(t, wants[i].data, in[j].Buffers[0][:in[j].N], "datagram %d", i)
			i++
		}
	}
}

func TestUDPBatchWithFaultsOnePerCall(t *testing.T) {
	rx, tx := listenUDPPair(t)
	f, err := faults.Parse("latency=1ms")
	require.NoError(t, err)
	require.NoError(t, gatenet.InjectFaults(rx, f))
	require.NoError(t, gatenet.InjectFaults(tx, f))
	out := make([]ipv4.Message, 3)
	for i := range out {
		out[i].Buffers = [][]byte{{byte(i)}}
		out[i].Addr = rx.LocalAddr()
	}
	n, err := tx.WriteBatch(out, 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)
	in := batchMessages(3, 10)
	for i := range 3 {
		n, err := rx.ReadBatch(in, 0)
		require.NoError(t, err)
		require.Equal(t, 1, n, "a faulted conn reads one datagram per call")
		require.Equal(t, []byte{byte(i)}, in[0].Buffers[0][:in[0].N])
	}
	require.Equal(t, 0, inq(t, rx))
}

func TestUDPBatchMisuse(t *testing.T) {
	rx, tx := listenUDPPair(t)
	n, err := tx.WriteBatch(nil, 0)
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = rx.ReadBatch(nil, 0)
	require.NoError(t, err)
	require.Zero(t, n)

	_, err = tx.WriteBatch([]ipv4.Message{{Buffers: [][]byte{{1}}, Addr: &net.TCPAddr{}}}, 0)
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "write", op.Op)
	require.ErrorIs(t, err, unix.EINVAL)

	_, err = tx.WriteBatch([]ipv4.Message{{Buffers: [][]byte{{1}}}}, 0)
	require.ErrorIs(t, err, unix.EDESTADDRREQ, "no address on an unconnected socket")

	_, err = rx.ReadBatch(batchMessages(1, 10), unix.MSG_DONTWAIT)
	require.ErrorIs(t, err, unix.EAGAIN)

	_, err = new(gatenet.UDPConn).ReadBatch(batchMessages(1, 1), 0)
	require.ErrorIs(t, err, unix.EINVAL)
	_, err = new(gatenet.UDPConn).WriteBatch(batchMessages(1, 1), 0)
	require.ErrorIs(t, err, unix.EINVAL)

	require.NoError(t, tx.Close())
	_, err = tx.WriteBatch([]ipv4.Message{{Buffers: [][]byte{{1}}, Addr: rx.LocalAddr()}}, 0)
	require.ErrorIs(t, err, net.ErrClosed)
}

// TestUDPBatchCloseUnblocks: a ReadBatch parked on an empty socket ends
// at Close, with GRO on and without.
func TestUDPBatchCloseUnblocks(t *testing.T) {
	for _, gro := range []bool{true, false} {
		rx, _ := listenUDPPair(t)
		if !gro {
			f, err := faults.Parse("latency=1ms")
			require.NoError(t, err)
			require.NoError(t, gatenet.InjectFaults(rx, f))
		}
		done := make(chan error, 1)
		go func() {
			_, err := rx.ReadBatch(batchMessages(4, 100), 0)
			done <- err
		}()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, rx.Close())
		select {
		case err := <-done:
			require.True(t, errors.Is(err, net.ErrClosed), "%v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not unblock ReadBatch")
		}
	}
}

// TestUDPBatchGROReadyQueue: a worker that takes part of a train and
// hands the conn back is given it again for the rest, though no
// datagram arrives to raise an edge.
func TestUDPBatchGROReadyQueue(t *testing.T) {
	rx, tx := listenUDPPair(t)
	q := gatenet.NewReadyQueue()
	defer q.Close()
	in := batchMessages(4, 1500)
	require.NoError(t, rx.SetReadDeadline(time.Now().Add(-time.Second)))
	rx.ReadBatch(in, 0) // GRO on
	require.NoError(t, rx.SetReadDeadline(time.Time{}))
	require.NoError(t, q.Add(rx))

	const segment = 1000
	payload := trainPayload(segment*10, segment)
	_, _, err := tx.WriteMsgUDP(payload, gsoOOB(segment), rx.LocalAddr().(*net.UDPAddr))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a watchdog
	defer cancel()
	got := 0
	for got < 10 {
		p, err := q.Next(ctx)
		require.NoError(t, err, "the held datagrams were never reported (%d of 10 read)", got)
		require.Same(t, rx, p)
		n, err := rx.ReadBatch(in, 0)
		require.NoError(t, err)
		for i := range n {
			require.Equal(t, payload[got*segment:(got+1)*segment], in[i].Buffers[0][:in[i].N])
			got++
		}
		require.NoError(t, q.Add(rx))
	}
}
