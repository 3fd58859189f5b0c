//go:build linux

package gatenet_test

// Issue 5's "Bad input" for UDP, side by side with net, beyond what
// udpsock_test.go covers (unconnected oversized writes, oob of 0 and 4
// bytes): oversized datagrams on a connected socket through every write
// method, and an oob buffer that holds a control message's header but not
// its data.

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// TestUDPBadInputParityOversizedConnected: a datagram over the 64 KiB
// limit on a connected UDP socket fails with EMSGSIZE inside net's
// *net.OpError{Op: "write"} whichever method sends it, and the socket
// stays usable.
func TestUDPBadInputParityOversizedConnected(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) []udpWriteObs {
				s := udpStackOf(s0)
				peer := udpListen(t, s, network, udpLoopback(network))
				c := udpDial(t, s, network, peer.LocalAddr().String())
				names := udpNames(c, "<C>", peer, "<peer>")
				big := make([]byte, 70000)
				var o []udpWriteObs
				n, err := c.Write(big)
				o = append(o, udpWriteObs{Kind: "Write", N: n, Err: udpObserve(err, names)})
				n, oobn, err := c.WriteMsgUDP(big, nil, nil)
				o = append(o, udpWriteObs{Kind: "WriteMsgUDP", N: n, OOBN: oobn, Err: udpObserve(err, names)})
				// Still usable: a normal datagram goes through.
				_, err = c.Write([]byte("ok"))
				require.NoError(t, err)
				buf := make([]byte, 8)
				n, _, err = peer.ReadFromUDP(buf)
				require.NoError(t, err)
				require.Equal(t, "ok", string(buf[:n]))
				return o
			}, func(t *testing.T, s sockStack, o []udpWriteObs) {
				for _, w := range o {
					require.Equal(t, "*net.OpError", w.Err.Type, "%+v", w)
					require.Equal(t, "write", w.Err.Op, "%+v", w)
					require.Equal(t, "EMSGSIZE", w.Err.Errno, "%+v", w)
					require.Contains(t, w.Err.Source, "<C>", "%+v", w)
				}
				require.Equal(t, "write", o[0].Err.Syscall)
				require.Equal(t, "sendmsg", o[1].Err.Syscall)
			})
		})
	}
}

// udpCtruncObs is one ReadMsgUDP with a short oob buffer.
type udpCtruncObs struct {
	OOBLen  int
	Read    udpReadObs
	CmsgLen uint64 // the header's cmsg_len, when a header fit
}

// TestUDPBadInputParityCtruncMidMessage: with IP_PKTINFO on, an oob buffer
// with room for the header but not the whole in_pktinfo gets the control
// message cut (cmsg_len says what was written) and MSG_CTRUNC, as net.
func TestUDPBadInputParityCtruncMidMessage(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	for _, network := range []string{"udp4", "udp6"} {
		t.Run(network, func(t *testing.T) {
			udpSkipUnlessNetwork(t, network)
			sockParity(t, func(t *testing.T, s0 sockStack) []udpCtruncObs {
				s := udpStackOf(s0)
				pc := udpListen(t, s, network, udpLoopback(network))
				peer := udpListen(t, s, network, udpLoopback(network))
				names := udpNames(pc, "<P>", peer, "<peer>")
				level, opt := unix.IPPROTO_IP, unix.IP_PKTINFO
				if network == "udp6" {
					level, opt = unix.IPPROTO_IPV6, unix.IPV6_RECVPKTINFO
				}
				sockRawFD(t, pc, func(fd int) { require.NoError(t, unix.SetsockoptInt(fd, level, opt, 1)) })
				var o []udpCtruncObs
				for _, oobLen := range []int{unix.SizeofCmsghdr, unix.SizeofCmsghdr + 4, unix.SizeofCmsghdr + 11} {
					_, err := peer.WriteToUDP([]byte("dgram"), pc.LocalAddr().(*net.UDPAddr))
					require.NoError(t, err)
					buf, oob := make([]byte, 16), make([]byte, oobLen)
					r := udpCtruncObs{OOBLen: oobLen}
					var a *net.UDPAddr
					r.Read.Kind = "ReadMsgUDP"
					r.Read.N, r.Read.OOBN, r.Read.Flags, a, err = pc.ReadMsgUDP(buf, oob)
					r.Read.Addr, r.Read.Err, r.Read.Data = udpAddr(names, a), udpObserve(err, names), string(buf[:max(r.Read.N, 0)])
					if r.Read.OOBN >= unix.SizeofCmsghdr {
						r.CmsgLen = binary.NativeEndian.Uint64(oob)
					}
					o = append(o, r)
				}
				return o
			}, func(t *testing.T, s sockStack, o []udpCtruncObs) {
				for _, r := range o {
					require.True(t, r.Read.Err.Nil, "%+v", r)
					require.Equal(t, "dgram", r.Read.Data, "%+v", r)
					require.NotZero(t, r.Read.Flags&unix.MSG_CTRUNC, "%+v", r)
					require.Equal(t, r.OOBLen, r.Read.OOBN, "the cut message fills the buffer: %+v", r)
					require.EqualValues(t, r.OOBLen, r.CmsgLen, "cmsg_len is what was written: %+v", r)
				}
			})
		})
	}
}
