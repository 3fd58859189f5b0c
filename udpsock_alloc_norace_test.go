//go:build linux && !race

package gatenet_test

// Allocation counts are only meaningful without the race detector.

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestUDPAddrPortNoAllocs: datagrams through WriteToUDPAddrPort,
// WriteToUDP, WriteMsgUDPAddrPort and WriteMsgUDP, read back with
// ReadFromUDPAddrPort and ReadMsgUDPAddrPort, allocate nothing (sockaddrs
// and msghdrs live on the stack), as with net's; once a ReadBatch turned
// receive offload on too, when the reads go through the trains.
func TestUDPAddrPortNoAllocs(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, network := range []string{"udp4", "udp6", "udp4 with GRO", "udp6 with GRO"} {
		t.Run(network, func(t *testing.T) {
			network, gro := strings.CutSuffix(network, " with GRO")
			udpSkipUnlessNetwork(t, network)
			a, err := gatenet.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(udpLoopback(network))))
			require.NoError(t, err)
			defer a.Close()
			b, err := gatenet.ListenUDP(network, net.UDPAddrFromAddrPort(netip.MustParseAddrPort(udpLoopback(network))))
			require.NoError(t, err)
			defer b.Close()
			if gro {
				_, err := b.ReadBatch(batchMessages(1, 16), unix.MSG_DONTWAIT)
				require.ErrorIs(t, err, unix.EAGAIN) // nothing queued; GRO is on now
			}
			to := b.LocalAddr().(*net.UDPAddr)
			toAP := to.AddrPort()
			msg, buf, oob := make([]byte, 512), make([]byte, 1024), make([]byte, 64)
			allocs := testing.AllocsPerRun(1000, func() {
				if _, err := a.WriteToUDPAddrPort(msg, toAP); err != nil {
					t.Fatal(err)
				}
				if _, err := a.WriteToUDP(msg, to); err != nil {
					t.Fatal(err)
				}
				if _, _, err := a.WriteMsgUDPAddrPort(msg, nil, toAP); err != nil {
					t.Fatal(err)
				}
				if _, _, err := a.WriteMsgUDP(msg, nil, to); err != nil {
					t.Fatal(err)
				}
				for range 2 {
					if n, _, err := b.ReadFromUDPAddrPort(buf); err != nil || n != len(msg) {
						t.Fatalf("read %d, %v", n, err)
					}
					if n, _, _, from, err := b.ReadMsgUDPAddrPort(buf, oob); err != nil || n != len(msg) || from != a.LocalAddr().(*net.UDPAddr).AddrPort() {
						t.Fatalf("read %d from %v, %v", n, from, err)
					}
				}
			})
			require.Zero(t, allocs, "allocations per round")
		})
	}
}
