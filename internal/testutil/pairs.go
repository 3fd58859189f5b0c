//go:build linux

package testutil

import (
	"net"
	"testing"

	"github.com/gatenet/gatenet"
)

// Pair returns a connected gatenet stream pair on network ("tcp4", "tcp6",
// "unix") and address (a loopback host:0, or a socket path), closed when
// t ends (tests that close them on purpose only get a second Close's
// ignored error).
func Pair(t testing.TB, network, address string) (client, server net.Conn) {
	t.Helper()
	return pairWith(t, gatenet.Listen, gatenet.Dial, network, address)
}

// NetTCPPair is TCPPair with the standard library, for comparisons.
func NetTCPPair(t testing.TB) (client, server *net.TCPConn) {
	t.Helper()
	c, s := pairWith(t, net.Listen, net.Dial, "tcp4", "127.0.0.1:0")
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// pairWith is Pair with listen and dial from gatenet or net.
func pairWith(t testing.TB, listen func(network, address string) (net.Listener, error), dial func(network, address string) (net.Conn, error), network, address string) (client, server net.Conn) {
	t.Helper()
	ln, err := listen(network, address)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, address, err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := dial(network, ln.Addr().String())
	if err != nil {
		t.Fatalf("dial %s %s: %v", network, ln.Addr(), err)
	}
	s := <-accepted
	if s == nil {
		c.Close()
		t.Fatalf("accept on %s failed", ln.Addr())
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TCPPair is Pair on 127.0.0.1, typed.
func TCPPair(t testing.TB) (client, server *gatenet.TCPConn) {
	t.Helper()
	c, s := Pair(t, "tcp4", "127.0.0.1:0")
	return c.(*gatenet.TCPConn), s.(*gatenet.TCPConn)
}
