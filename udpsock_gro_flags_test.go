//go:build linux

package gatenet_test

// ReadBatch's flags and large control data with receive offload on: the
// results are x/net's on a net socket, which the kernel cuts trains for.

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// batchReader is ReadBatch, gatenet's or x/net's.
type batchReader interface {
	ReadBatch([]ipv4.Message, int) (int, error)
}

// batchResult is a ReadBatch's result as text: n or the error, then each
// message's N, Flags, NN and payload.
func batchResult(r batchReader, msgs, size, flags int) string {
	ms := batchMessages(msgs, size)
	n, err := r.ReadBatch(ms, flags)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return errno.Error()
		}
		return err.Error()
	}
	s := fmt.Sprint(n)
	for _, m := range ms[:n] {
		end := min(m.N, size)
		s += fmt.Sprintf(" [N=%d flags=%#x NN=%d %q]", m.N, m.Flags, m.NN, m.Buffers[0][:end])
	}
	return s
}

// TestUDPGROBatchFlagsAsXNet: with receive offload on, ReadBatch takes
// recvmmsg(2)'s flags as x/net's does on a socket without it: MSG_PEEK
// hands out the next datagram, in every message, and leaves it queued;
// MSG_TRUNC reports a truncated datagram's whole length; MSG_WAITFORONE
// takes what is there. Before, every flag but MSG_DONTWAIT failed with
// EOPNOTSUPP once offload was on, the first ReadBatch included.
func TestUDPGROBatchFlagsAsXNet(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, flags := range []int{unix.MSG_PEEK, unix.MSG_TRUNC, unix.MSG_WAITFORONE, unix.MSG_PEEK | unix.MSG_TRUNC} {
		for _, train := range []bool{false, true} {
			t.Run(fmt.Sprintf("flags=%#x/train=%v", flags, train), func(t *testing.T) {
				g, s, tx := udp4Trio(t)
				groOn(t, g)
				var err error
				for _, to := range []*net.UDPAddr{g.LocalAddr().(*net.UDPAddr), s.LocalAddr().(*net.UDPAddr)} {
					if train { // three datagrams of 40 bytes, sent as one
						_, _, err = tx.WriteMsgUDP(trainPayload(120, 40), gsoOOB(40), to)
						require.NoError(t, err)
					} else {
						for _, d := range []string{"a datagram of 31 bytes, at last", "short"} {
							_, err = tx.WriteToUDP([]byte(d), to)
							require.NoError(t, err)
						}
					}
				}
				require.Equal(t, 1, groOption(t, g))
				require.Zero(t, groOption(t, s))
				xr := ipv4.NewPacketConn(s)
				// The flags, then what is left, twice: the same text for both.
				for step, f := range []int{flags, flags, 0, 0} {
					want := batchResult(xr, 2, 16, f|unix.MSG_DONTWAIT)
					got := batchResult(g, 2, 16, f|unix.MSG_DONTWAIT)
					require.Equal(t, want, got, "step %d, flags %#x", step, f)
				}
			})
		}
	}
}

// TestUDPGROBatchErrQueueAsXNet: with receive offload on, ReadBatch with
// MSG_ERRQUEUE reads the socket's error queue (IP_RECVERR), as x/net's:
// it failed with EOPNOTSUPP.
func TestUDPGROBatchErrQueueAsXNet(t *testing.T) {
	testutil.CheckLeaks(t)
	closed, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	nobody := closed.LocalAddr().(*net.UDPAddr)
	closed.Close()
	errQueue := func(c syscall.Conn, w interface {
		WriteToUDP([]byte, *net.UDPAddr) (int, error)
	}, r batchReader) string {
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) {
			require.NoError(t, unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1))
		}))
		_, err = w.WriteToUDP([]byte("to nobody"), nobody) // an ICMP port unreachable comes back
		require.NoError(t, err)
		for limit := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			res := batchResult(r, 2, 64, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if res != unix.EAGAIN.Error() || time.Now().After(limit) {
				return res
			}
		}
	}
	s, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer s.Close()
	want := errQueue(s, s, ipv4.NewPacketConn(s))
	g, err := gatenet.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer g.Close()
	groOn(t, g)
	got := errQueue(g, g, g)
	require.Contains(t, want, fmt.Sprintf("flags=%#x", unix.MSG_ERRQUEUE))
	require.Equal(t, want, got)
}

// TestUDPGROControlPastGROBuffer: control data longer than the offload
// path's own buffer (256 bytes) reaches the caller whole, as net's: with
// the same options on, a train's datagrams carry what net's reader gets
// for the same datagrams cut by the kernel, with no MSG_CTRUNC. Before,
// the last message was dropped and MSG_CTRUNC set.
func TestUDPGROControlPastGROBuffer(t *testing.T) {
	testutil.CheckLeaks(t)
	options := []struct{ level, name, value int }{
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1},
		{unix.SOL_SOCKET, unix.SO_TIMESTAMPING, unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE},
		{unix.SOL_SOCKET, unix.SO_RCVMARK, 1},
		{unix.SOL_SOCKET, unix.SO_RCVPRIORITY, 1},
		{unix.IPPROTO_IP, unix.IP_PKTINFO, 1},
		{unix.IPPROTO_IP, unix.IP_RECVTOS, 1},
		{unix.IPPROTO_IP, unix.IP_RECVTTL, 1},
		{unix.IPPROTO_IP, unix.IP_RECVORIGDSTADDR, 1},
	}
	// setOptions sets those the kernel has and returns which.
	setOptions := func(c syscall.Conn) (set []int) {
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) {
			for i, o := range options {
				if unix.SetsockoptInt(int(fd), o.level, o.name, o.value) == nil {
					set = append(set, i)
				}
			}
		}))
		return set
	}
	// controlTypes is each control message's level and type, in order.
	controlTypes := func(oob []byte) string {
		msgs, err := unix.ParseSocketControlMessage(oob)
		require.NoError(t, err)
		var s string
		for _, m := range msgs {
			s += fmt.Sprintf("%d/%d ", m.Header.Level, m.Header.Type)
		}
		return s
	}
	read := func(r interface {
		ReadMsgUDP(b, oob []byte) (int, int, int, *net.UDPAddr, error)
	}) string {
		b, oob := make([]byte, 64), make([]byte, 1024)
		n, oobn, flags, _, err := r.ReadMsgUDP(b, oob)
		require.NoError(t, err)
		return fmt.Sprintf("%q oobn=%d flags=%#x %s", b[:n], oobn, flags, controlTypes(oob[:oobn]))
	}
	g, s, tx := udp4Trio(t)
	have := setOptions(s)
	require.Equal(t, have, setOptions(g))
	groOn(t, g)
	var err error
	payload := trainPayload(90, 30)
	for _, c := range []*net.UDPAddr{s.LocalAddr().(*net.UDPAddr), g.LocalAddr().(*net.UDPAddr)} {
		_, _, err = tx.WriteMsgUDP(payload, gsoOOB(30), c)
		require.NoError(t, err)
	}
	for i := range 3 {
		want := read(s)
		require.Equal(t, want, read(g), "datagram %d", i)
		if i == 0 {
			t.Logf("net: %s (options the kernel has: %v)", want, have)
		}
	}
	require.Zero(t, inq(t, g), "the train was queued cut: GRO is off")
}
