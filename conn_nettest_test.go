//go:build linux

package gatenet_test

// golang.org/x/net/nettest.TestConn over gatenet's stream sockets: TCP on
// 127.0.0.1 and [::1], and Unix stream sockets, each both ways round (the
// dialed conn as c1, and the accepted conn as c1).

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// sockNettestPipe is a nettest.MakePipe: a gatenet listener on address,
// one gatenet Dial and one Accept; the listener is closed before it
// returns. acceptedFirst makes the accepted conn c1; mptcp makes both the
// listener and the dialer use Multipath TCP.
func sockNettestPipe(network, address string, acceptedFirst, mptcp bool) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		var lc gatenet.ListenConfig
		var d gatenet.Dialer
		lc.SetMultipathTCP(mptcp)
		d.SetMultipathTCP(mptcp)
		ln, err := lc.Listen(context.Background(), network, address)
		if err != nil {
			return nil, nil, nil, err
		}
		defer ln.Close()
		c1, c2, err = testutil.Connect(ln, func() (net.Conn, error) {
			return d.Dial(ln.Addr().Network(), ln.Addr().String())
		})
		if err != nil {
			return nil, nil, nil, err
		}
		if acceptedFirst {
			c1, c2 = c2, c1
		}
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	}
}

func TestSockNettest(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for _, tc := range []struct{ name, network, address string }{
		{"tcp4", "tcp4", "127.0.0.1:0"},
		{"tcp6", "tcp6", "[::1]:0"},
		{"unix", "unix", ""}, // a path in t.TempDir()
	} {
		for _, acceptedFirst := range []bool{false, true} {
			name := tc.name + "/dialed-c1"
			if acceptedFirst {
				name = tc.name + "/accepted-c1"
			}
			t.Run(name, func(t *testing.T) {
				if tc.network == "tcp6" && !nettest.SupportsIPv6() {
					t.Skip("IPv6 loopback ([::1]) is not available on this machine")
				}
				testutil.CheckLeaks(t)
				address := tc.address
				if tc.network == "unix" {
					address = t.TempDir() + "/s"
				}
				nettest.TestConn(t, sockNettestPipe(tc.network, address, acceptedFirst, false))
			})
		}
	}
}
