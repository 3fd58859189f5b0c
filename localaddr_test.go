//go:build linux

package gatenet_test

import (
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// localAddrObs is what both ends of a connection say of their local
// addresses, asked for the first time before or only after Close.
type localAddrObs struct {
	Type, Network     string
	SameAsClientsPeer bool // the accepted conn's LocalAddr().String() == the dialer's RemoteAddr().String()
	SameAsServersPeer bool // and the other way round
}

// TestSockLocalAddrConnected: gatenet learns a connected stream socket's
// local address when first asked (localaddr.go) where net asks at accept
// and connect. Asked before Close, after Close only, or on a listener
// bound to the wildcard address (the conn's address is the specific one
// the client dialled), both ends must say exactly what net's do.
func TestSockLocalAddrConnected(t *testing.T) {
	cases := []struct{ network, address string }{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
		{"tcp", ":0"}, // the wildcard: the conn's local address is 127.0.0.1 or ::1
		{"unix", ""},
		{"unixpacket", ""},
	}
	for _, tc := range cases {
		for _, askBefore := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/%s/askBeforeClose=%v", tc.network, tc.address, askBefore), func(t *testing.T) {
				sockParity(t, func(t *testing.T, s sockStack) localAddrObs {
					address := sockAddressOr(t, tc.network, tc.address)
					ln, err := s.Listen(tc.network, address)
					require.NoError(t, err)
					defer ln.Close()
					dialAddr := ln.Addr().String()
					if tc.address == ":0" {
						dialAddr = net.JoinHostPort("127.0.0.1", fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
					}
					client, server := sockConnectTo(t, s, ln, sockDialOpts{}, dialAddr)
					var before [2]string
					if askBefore {
						before = [2]string{server.LocalAddr().String(), client.LocalAddr().String()}
					}
					require.NoError(t, server.Close())
					require.NoError(t, client.Close())
					sla, cla := server.LocalAddr(), client.LocalAddr()
					require.NotNil(t, sla, "accepted conn's LocalAddr after Close")
					require.NotNil(t, cla, "dialled conn's LocalAddr after Close")
					if askBefore {
						require.Equal(t, before, [2]string{sla.String(), cla.String()}, "an address changed at Close")
					}
					return localAddrObs{
						Type:              fmt.Sprintf("%T", sla),
						Network:           sla.Network(),
						SameAsClientsPeer: sla.String() == client.RemoteAddr().String(),
						SameAsServersPeer: cla.String() == server.RemoteAddr().String(),
					}
				}, func(t *testing.T, s sockStack, obs localAddrObs) {
					if tc.network != "unix" && tc.network != "unixpacket" {
						require.True(t, obs.SameAsClientsPeer, "%s: LocalAddr is not what the client dialled", s.Name)
						require.True(t, obs.SameAsServersPeer, "%s: the dialler's LocalAddr is not the server's peer", s.Name)
					}
				})
			})
		}
	}
}

// TestSockLocalAddrRacesClose: LocalAddr from many goroutines at once, one
// of them closing the conn meanwhile, always gets the one address, on the
// accepted and the dialled end (run under -race: the address is learnt
// once, atomically, and never through a number Close has let go of).
func TestSockLocalAddrRacesClose(t *testing.T) {
	for round := range 50 {
		client, server, ln := sockPair(t, sockGatenetStack, "tcp4")
		for _, end := range []struct {
			c    net.Conn
			want string
		}{{server, ln.Addr().String()}, {client, server.RemoteAddr().String()}} {
			var wg sync.WaitGroup
			got := make([]string, 8)
			for i := range got {
				wg.Go(func() {
					if i == round%len(got) {
						end.c.Close()
					}
					if a := end.c.LocalAddr(); a != nil {
						got[i] = a.String()
					}
				})
			}
			wg.Wait()
			for i, g := range got {
				require.Equal(t, end.want, g, "round %d, goroutine %d", round, i)
			}
		}
	}
}
