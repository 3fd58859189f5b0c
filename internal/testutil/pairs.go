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

// NetPair is Pair with the standard library, for comparisons.
func NetPair(t testing.TB, network, address string) (client, server net.Conn) {
	t.Helper()
	return pairWith(t, net.Listen, net.Dial, network, address)
}

// pairWith is Pair with listen and dial from gatenet or net.
func pairWith(t testing.TB, listen func(network, address string) (net.Listener, error), dial func(network, address string) (net.Conn, error), network, address string) (client, server net.Conn) {
	t.Helper()
	ln, err := listen(network, address)
	if err != nil {
		t.Fatalf("listen %s %s: %v", network, address, err)
	}
	defer ln.Close()
	c, s, err := Connect(ln, func() (net.Conn, error) { return dial(network, ln.Addr().String()) })
	if err != nil {
		t.Fatalf("connect to %s %s: %v", network, ln.Addr(), err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// Connect runs one Accept on ln while dial connects to it, and returns
// the dialed conn and the accepted one. If either fails it closes ln (so
// the Accept returns) and whichever conn was made, and returns the error:
// it leaves nothing open and fails no test, so a nettest.MakePipe can use
// it as well as a helper that takes a *testing.T.
func Connect(ln net.Listener, dial func() (net.Conn, error)) (client, server net.Conn, err error) {
	type accepted struct {
		c   net.Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := ln.Accept()
		ch <- accepted{c, err}
	}()
	client, err = dial()
	if err != nil {
		ln.Close()
		if a := <-ch; a.c != nil {
			a.c.Close()
		}
		return nil, nil, err
	}
	a := <-ch
	if a.err != nil {
		client.Close()
		return nil, nil, a.err
	}
	return client, a.c, nil
}

// TCPPair is Pair on 127.0.0.1, typed.
func TCPPair(t testing.TB) (client, server *gatenet.TCPConn) {
	t.Helper()
	c, s := Pair(t, "tcp4", "127.0.0.1:0")
	return c.(*gatenet.TCPConn), s.(*gatenet.TCPConn)
}
