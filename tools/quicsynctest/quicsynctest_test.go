//go:build linux

// Package quicsynctest checks quic-go over gatenet's UDP sockets: inside a
// testing/synctest bubble, its timers on the bubble's fake clock; on the
// real clock, an HTTP/3 round trip and every optimisation quic-go probes
// for (http3_test.go). It is a module of its own so that the library's
// go.mod gains nothing.
package quicsynctest

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/tlstest"
)

// idleTimeout is long enough that the test could not pass on the real
// clock within the watchdog's limit.
const idleTimeout = 30 * time.Second

// watchdogLimit is how long, on the real clock, the bubble may run before
// the test dumps every goroutine: a bubble whose goroutines never all park
// durably does not move its clock, and hangs rather than fails.
const watchdogLimit = 60 * time.Second

// TestQUICIdleTimeoutInFakeTime runs a QUIC echo over two gatenet UDP
// sockets of a bubble, then lets the connection idle: its 30 s idle timeout
// must end it on the fake clock, in no time on the real one.
func TestQUICIdleTimeoutInFakeTime(t *testing.T) {
	t.Run("UDPConn", func(t *testing.T) {
		// As quic-go takes a *net.UDPConn: options set through
		// SyscallConn, batches read with recvmmsg(2) in RawConn.Read.
		testIdleTimeout(t, func(c *gatenet.UDPConn) net.PacketConn { return c })
	})
	t.Run("PacketConn", func(t *testing.T) {
		// Only net.PacketConn's methods: quic-go reads with ReadFrom.
		testIdleTimeout(t, func(c *gatenet.UDPConn) net.PacketConn { return packetConn{c: c} })
	})
}

// packetConn hides every method of a *gatenet.UDPConn but net.PacketConn's
// and the buffer sizes quic-go asks for, so quic-go falls back to its
// plain ReadFrom and WriteTo, as over any other PacketConn.
type packetConn struct{ c *gatenet.UDPConn }

func (c packetConn) ReadFrom(b []byte) (int, net.Addr, error)  { return c.c.ReadFrom(b) }
func (c packetConn) WriteTo(b []byte, a net.Addr) (int, error) { return c.c.WriteTo(b, a) }
func (c packetConn) Close() error                              { return c.c.Close() }
func (c packetConn) LocalAddr() net.Addr                       { return c.c.LocalAddr() }
func (c packetConn) SetDeadline(t time.Time) error             { return c.c.SetDeadline(t) }
func (c packetConn) SetReadDeadline(t time.Time) error         { return c.c.SetReadDeadline(t) }
func (c packetConn) SetWriteDeadline(t time.Time) error        { return c.c.SetWriteDeadline(t) }
func (c packetConn) SetReadBuffer(n int) error                 { return c.c.SetReadBuffer(n) }
func (c packetConn) SetWriteBuffer(n int) error                { return c.c.SetWriteBuffer(n) }

// testIdleTimeout is the test, with wrap choosing what quic-go is given of
// each socket.
func testIdleTimeout(t *testing.T, wrap func(*gatenet.UDPConn) net.PacketConn) {
	// Started outside the bubble, so it runs on the real clock.
	dog := time.AfterFunc(watchdogLimit, func() {
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		panic("quicsynctest: bubble still running after " + watchdogLimit.String() + " of real time\n" + string(buf))
	})
	defer dog.Stop()
	// Measured outside the bubble: inside it, time.Now is the fake clock.
	wallStart := time.Now()
	var fake time.Duration
	// tlstest's CA is made here, on the real clock; the client does not
	// verify the certificate, whose validity the bubble's clock (in 2000)
	// would fail.
	srvTLS := tlstest.DefaultServerConfig().Clone()
	srvTLS.NextProtos = []string{alpn}

	synctest.Test(t, func(t *testing.T) {
		loopback := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
		srvSock, err := gatenet.ListenUDP("udp", loopback)
		if err != nil {
			t.Fatal(err)
		}
		defer srvSock.Close()
		cliSock, err := gatenet.ListenUDP("udp", loopback)
		if err != nil {
			t.Fatal(err)
		}
		defer cliSock.Close()

		conf := &quic.Config{MaxIdleTimeout: idleTimeout}
		// A Transport does not close a Conn it was given: the sockets'
		// deferred Closes, run after its own, end their readers.
		srvTr := &quic.Transport{Conn: wrap(srvSock)}
		defer srvTr.Close()
		cliTr := &quic.Transport{Conn: wrap(cliSock)}
		defer cliTr.Close()

		ln, err := srvTr.Listen(srvTLS, conf)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()

		// The server echoes one stream, then waits for the next, which
		// only the idle timeout ends.
		srvErr := make(chan error, 1)
		go func() {
			srvErr <- func() error {
				conn, err := ln.Accept(t.Context())
				if err != nil {
					return err
				}
				defer conn.CloseWithError(0, "")
				str, err := conn.AcceptStream(t.Context())
				if err != nil {
					return err
				}
				msg, err := io.ReadAll(str)
				if err != nil {
					return err
				}
				if _, err := str.Write(msg); err != nil {
					return err
				}
				if err := str.Close(); err != nil {
					return err
				}
				_, err = conn.AcceptStream(t.Context())
				return err
			}()
		}()

		cliTLS := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}}
		conn, err := cliTr.Dial(t.Context(), srvSock.LocalAddr(), cliTLS, conf)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseWithError(0, "")
		str, err := conn.OpenStreamSync(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		const msg = "hello over quic in a bubble"
		if _, err := str.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		if err := str.Close(); err != nil { // ends the server's ReadAll
			t.Fatal(err)
		}
		echo, err := io.ReadAll(str)
		if err != nil {
			t.Fatal(err)
		}
		if string(echo) != msg {
			t.Fatalf("echo = %q, want %q", echo, msg)
		}

		// Both ends are now idle: only the bubble's clock can end them.
		start := time.Now()
		<-conn.Context().Done()
		fake = time.Since(start)
		var idle *quic.IdleTimeoutError
		if err := context.Cause(conn.Context()); !errors.As(err, &idle) {
			t.Errorf("client connection ended with %v, want an idle timeout", err)
		}
		if err := <-srvErr; !errors.As(err, &idle) {
			t.Errorf("server AcceptStream: %v, want an idle timeout", err)
		}
		if fake < idleTimeout {
			t.Errorf("idle timeout after %v of fake time, want at least %v", fake, idleTimeout)
		}
	})
	t.Logf("idle timeout after %v of fake time; whole bubble took %v of wall time", fake, time.Since(wallStart))
}

// alpn is the protocol both ends agree on; QUIC requires one.
const alpn = "synctest"
