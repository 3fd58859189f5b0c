//go:build linux

package tlstest_test

// Deadlines: a client handshake that exceeds its deadline (net and gatenet
// side by side), a peer that stalls mid-handshake, a tls.Conn surviving a
// read timeout (checklist row 63), and servers fed bad input.

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/tlstest"
)

// clientHello is the first record of a real client handshake (a ClientHello
// for 127.0.0.1), captured over net.Pipe.
func clientHello(t testing.TB) []byte {
	t.Helper()
	a, b := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		cfg := tlstest.DefaultClientConfig()
		cfg.ServerName = "127.0.0.1"
		tls.Client(a, cfg).Handshake() // fails when b closes
		a.Close()
	}()
	defer func() {
		b.Close()
		<-done
	}()
	b.SetDeadline(time.Now().Add(time.Minute))
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 5+int(binary.BigEndian.Uint16(hdr[3:])))
	copy(rec, hdr)
	if _, err := io.ReadFull(b, rec[5:]); err != nil {
		t.Fatal(err)
	}
	if rec[0] != 22 || rec[5] != 1 { // handshake record, ClientHello
		t.Fatalf("captured record type %d, message type %d: not a ClientHello", rec[0], rec[5])
	}
	return rec
}

type handshakeDeadlineObs struct {
	Err string
	// FreedBeforeClose: the client's descriptor was gone before Close
	// (HandshakeContext closes the conn when its context expires).
	FreedBeforeClose bool
}

// TestHandshakeDeadline: a client handshake against a server that accepts
// and never answers fails with a timeout, through a conn deadline or a
// context deadline, and the descriptor is freed; the same as over net.
func TestHandshakeDeadline(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for _, mode := range []string{"SetDeadline", "HandshakeContext"} {
		t.Run(mode, func(t *testing.T) {
			stackParity(t, func(t *testing.T, st stack) handshakeDeadlineObs {
				ln, err := st.listen(context.Background(), "tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer ln.Close()
				// The deadline is to pass while the client waits for the
				// server's answer. One that passes before the ClientHello
				// is written (a loaded machine) fails that write instead,
				// and is tried again, longer. (The context's expiry is
				// ctx.Err() whenever it comes: that mode never retries.)
				var o handshakeDeadlineObs
				testutil.RetrySlow(t, 50*time.Millisecond, "the ClientHello was written", func(d time.Duration) bool {
					accepted := make(chan net.Conn, 1)
					go func() {
						c, _ := ln.Accept()
						accepted <- c // held, never answered
					}()
					baseline := testutil.OpenFDs(t)
					raw, err := st.dial(context.Background(), "tcp", ln.Addr().String())
					require.NoError(t, err)
					peer := recv(t, accepted, "accepted conn")
					require.NotNil(t, peer)
					c := tls.Client(raw, &tls.Config{RootCAs: tlstest.DefaultCA().Pool(), ServerName: "127.0.0.1"})
					switch mode {
					case "SetDeadline":
						raw.SetDeadline(time.Now().Add(d))
						err = c.Handshake()
					case "HandshakeContext":
						ctx, cancel := context.WithTimeout(context.Background(), d)
						err = c.HandshakeContext(ctx)
						cancel()
					}
					var op *net.OpError
					tooSlow := mode == "SetDeadline" && errors.As(err, &op) && op.Op == "write"
					if !isTimeout(err) {
						t.Errorf("handshake error %v is not a timeout", err)
					}
					o = handshakeDeadlineObs{Err: describeErr(err)}
					// HandshakeContext's Close runs in a context.AfterFunc
					// goroutine: give it time to finish. Nothing closes the
					// conn after a deadline timeout: look once.
					for wait := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
						if o.FreedBeforeClose = testutil.OpenFDs(t) == baseline+1; o.FreedBeforeClose || mode == "SetDeadline" || time.Now().After(wait) {
							break
						}
					}
					c.Close()
					peer.Close()
					waitFDs(t, baseline)
					return tooSlow
				})
				t.Logf("%+v", o)
				return o
			})
		})
	}
}

// stall dials srv with a raw gatenet conn and writes the first half of a
// ClientHello, then nothing.
func stall(t testing.TB, srv *tlstest.Server, hello []byte) net.Conn {
	t.Helper()
	raw, err := gatenet.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { raw.Close() })
	_, err = raw.Write(hello[:len(hello)/2])
	require.NoError(t, err)
	return raw
}

// echoOnce dials srv, sends a line through its echo handler and checks it
// comes back.
func echoOnce(t testing.TB, srv *tlstest.Server, line string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := srv.DialContext(ctx, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write([]byte(line)); err != nil {
		return err
	}
	buf := make([]byte, len(line))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != line {
		return errors.New("echoed " + string(buf) + ", want " + line)
	}
	return nil
}

// serveOthers runs n echo clients concurrently against srv.
func serveOthers(t testing.TB, srv *tlstest.Server, n int) {
	t.Helper()
	for _, err := range othersErrors(t, srv, n) {
		t.Errorf("a client was not served: %v", err)
	}
}

// othersErrors runs n echo clients concurrently against srv and returns
// the errors of those that were not served.
func othersErrors(t testing.TB, srv *tlstest.Server, n int) []error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() { errs <- echoOnce(t, srv, "client "+string(rune('a'+i%26))+"\n") })
	}
	wg.Wait()
	close(errs)
	var failed []error
	for err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	return failed
}

// timedOut counts the handshake errors left in herrs (read once the
// server is closed) that are the server's handshake deadline's: with a
// short HandshakeTimeout, those of handshakes that had to succeed mean
// the machine was too slow for it.
func timedOut(herrs <-chan error) int {
	n := 0
	for {
		select {
		case err := <-herrs:
			if errors.Is(err, os.ErrDeadlineExceeded) {
				n++
			}
		default:
			return n
		}
	}
}

// readToEOF reads what the server sends on raw until it closes the
// connection, bounded by a minute.
func readToEOF(t testing.TB, raw net.Conn) {
	t.Helper()
	raw.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := io.Copy(io.Discard, raw)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("the server did not close the connection: %v", err)
	}
}

// TestStalledPeer: a peer that sends half a ClientHello and then nothing
// does not hang the server. While its handshake is pending, other clients
// are served; its handshake ends with an error when the peer goes away,
// and with a timeout when the server's handshake deadline passes.
func TestStalledPeer(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	hello := clientHello(t)

	t.Run("others served meanwhile", func(t *testing.T) {
		testutil.CheckLeaks(t)
		srv := tlstest.NewUnstartedServer(t, nil, nil)
		srv.HandshakeTimeout = 10 * time.Minute // outlasts the test: the handshake is pending throughout
		herrs := handshakeErrors(srv)
		srv.Start()
		raw := stall(t, srv, hello)
		serveOthers(t, srv, 20)
		if ok, failed := srv.Handshakes(); ok != 20 || failed != 0 {
			t.Fatalf("handshakes: %d ok, %d failed; want 20 and 0 (the stalled one still pending)", ok, failed)
		}
		raw.Close()
		err := recv(t, herrs, "server handshake error")
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Errorf("server handshake error %v, want an unexpected EOF", err)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		testutil.CheckLeaks(t)
		// The deadline applies to the others' handshakes too, which must
		// succeed.
		handshakeRounds(t, "the other clients' handshakes ended", func(srv *tlstest.Server, herrs <-chan error) (failures []string, tooSlow bool) {
			raw := stall(t, srv, hello)
			for _, err := range othersErrors(t, srv, 5) {
				failures = append(failures, fmt.Sprintf("a client was not served: %v", err))
			}
			err := recv(t, herrs, "server handshake error")
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				failures = append(failures, fmt.Sprintf("server handshake error %v, want os.ErrDeadlineExceeded", err))
			}
			readToEOF(t, raw)
			if err := echoOnce(t, srv, "after\n"); err != nil {
				failures = append(failures, fmt.Sprintf("not served after the stalled handshake timed out: %v", err))
			}
			return failures, false
		})
	})
}

// handshakeRounds runs round against a fresh server whose
// HandshakeTimeout is short, and again with it doubled
// (testutil.RetrySlow) while the server timed out a handshake that was to
// end otherwise, or round says it was too slow: a loaded machine, not a
// failure. It reports the last round's failures.
func handshakeRounds(t *testing.T, what string, round func(srv *tlstest.Server, herrs <-chan error) (failures []string, tooSlow bool)) {
	t.Helper()
	var failures []string
	testutil.RetrySlow(t, 200*time.Millisecond, what, func(d time.Duration) bool {
		srv := tlstest.NewUnstartedServer(t, nil, nil)
		srv.HandshakeTimeout = d
		herrs := handshakeErrors(srv)
		srv.Start()
		var tooSlow bool
		failures, tooSlow = round(srv, herrs)
		srv.Close()
		return tooSlow || timedOut(herrs) > 0
	})
	for _, f := range failures {
		t.Error(f)
	}
}

type readTimeoutObs struct {
	N1        int
	Err1      string
	DirectNet bool // err.(net.Error) without unwrapping, as crypto/tls asserts
	Temporary bool
	N2        int
	Data2     string
	Err2      string
}

// TestTLSReadTimeoutSurvives is checklist row 63: a tls.Conn survives a
// read timeout, because the timeout is a direct net.Error whose
// Temporary() is true (crypto/tls makes other read errors permanent).
func TestTLSReadTimeoutSurvives(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			stackParity(t, func(t *testing.T, st stack) readTimeoutObs {
				c, s := tlsPairOn(t, st, network, nil, nil)
				var o readTimeoutObs
				buf := make([]byte, 16)
				c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
				var err error
				o.N1, err = c.Read(buf)
				o.Err1 = describeErr(err)
				if ne, ok := err.(net.Error); ok {
					o.DirectNet = true
					//lint:ignore SA1019 crypto/tls keeps a conn usable after a read error only if it is Temporary: that is what this test checks
					o.Temporary = ne.Temporary()
				}
				c.SetReadDeadline(time.Time{})
				if _, err := s.Write([]byte("hello")); err != nil {
					t.Fatal(err)
				}
				c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang detector
				o.N2, err = c.Read(buf)
				o.Data2, o.Err2 = string(buf[:o.N2]), describeErr(err)
				t.Logf("%+v", o)
				require.Equal(t, readTimeoutObs{N1: 0, Err1: o.Err1, DirectNet: true, Temporary: true, N2: 5, Data2: "hello", Err2: "nil"}, o)
				if !strings.Contains(o.Err1, "DeadlineExceeded") {
					t.Errorf("first read: %s, want a deadline timeout", o.Err1)
				}
				return o
			})
		})
	}
}

// TestBadInput: garbage instead of a ClientHello, a silent client, clients
// that go away mid-handshake. Each time the server's handshake fails with
// the expected error, the server closes that connection and keeps serving.
func TestBadInput(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	hello := clientHello(t)
	for _, tc := range []struct {
		name string
		// act misbehaves on raw; it returns whether the server is left to
		// close the connection.
		act   func(raw net.Conn) (serverCloses bool)
		check func(err error) bool
	}{
		{
			name: "HTTP instead of a ClientHello",
			act: func(raw net.Conn) bool {
				raw.Write([]byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
				return true
			},
			check: func(err error) bool {
				return strings.Contains(err.Error(), "does not look like a TLS handshake")
			},
		},
		{
			name: "binary garbage",
			act: func(raw net.Conn) bool {
				raw.Write(bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 256))
				return true
			},
			check: func(err error) bool { return err != nil },
		},
		{
			name: "a record of an oversized length",
			act: func(raw net.Conn) bool {
				raw.Write([]byte{22, 3, 1, 0xff, 0xff, 1, 0xff, 0xff, 0xff})
				return true
			},
			check: func(err error) bool { return strings.Contains(err.Error(), "oversized record") },
		},
		{
			name:  "nothing sent",
			act:   func(net.Conn) bool { return true },
			check: func(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) },
		},
		{
			name: "disconnect before a byte",
			act: func(raw net.Conn) bool {
				raw.Close()
				return false
			},
			check: func(err error) bool { return errors.Is(err, io.EOF) },
		},
		{
			name: "disconnect mid-ClientHello",
			act: func(raw net.Conn) bool {
				raw.Write(hello[:len(hello)/2])
				raw.Close()
				return false
			},
			check: func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
		},
		{
			name: "disconnect after the ClientHello",
			act: func(raw net.Conn) bool {
				raw.Write(hello)
				// Wait for the server's flight, then go.
				raw.SetReadDeadline(time.Now().Add(time.Minute))
				raw.Read(make([]byte, 1))
				raw.Close()
				return false
			},
			check: func(err error) bool {
				return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			// The deadline applies to every handshake, though only
			// "nothing sent" is to end by it.
			handshakeRounds(t, "the handshakes ended otherwise", func(srv *tlstest.Server, herrs <-chan error) (failures []string, tooSlow bool) {
				raw, err := gatenet.Dial("tcp", srv.Addr().String())
				require.NoError(t, err)
				defer raw.Close()
				serverCloses := tc.act(raw)
				herr := recv(t, herrs, "server handshake error")
				t.Logf("server handshake error: %v", herr)
				if !tc.check(herr) {
					tooSlow = errors.Is(herr, os.ErrDeadlineExceeded)
					failures = append(failures, fmt.Sprintf("unexpected server handshake error %v", herr))
				}
				if serverCloses {
					readToEOF(t, raw)
				}
				for _, err := range othersErrors(t, srv, 3) {
					failures = append(failures, fmt.Sprintf("a client was not served: %v", err))
				}
				srv.Close()
				if ok, failed := srv.Handshakes(); ok != 3 || failed != 1 {
					failures = append(failures, fmt.Sprintf("handshakes: %d ok, %d failed; want 3 and 1", ok, failed))
				}
				return failures, tooSlow
			})
		})
	}
}

type writeTimeoutObs struct {
	// Short: the timed-out Write reports fewer bytes than it was given.
	// Whether it took any at all before the deadline is the kernel's and
	// the scheduler's call (net itself returns 0 on a busy machine), so
	// that is neither asserted nor compared.
	Short    bool
	Err      string
	NextN    int
	NextErr  string
	ReadBack string // the other direction after the write timeout
}

// TestTLSWriteTimeoutParity: unlike a read timeout, a write timeout breaks
// a tls.Conn's writing for good ("the TLS state is corrupt", as
// tls.Conn.SetWriteDeadline says) while reading goes on; the same over net
// and gatenet, down to the errors.
func TestTLSWriteTimeoutParity(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	stackParity(t, func(t *testing.T, st stack) writeTimeoutObs {
		c, s := tlsPairOn(t, st, "tcp", nil, nil)
		var o writeTimeoutObs
		c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := c.Write(make([]byte, 64<<20)) // the peer does not read
		o.Short, o.Err = n < 64<<20, describeErr(err)
		c.SetWriteDeadline(time.Time{})
		o.NextN, err = c.Write([]byte("x"))
		o.NextErr = describeErr(err)
		s.Write([]byte("still readable"))
		c.SetReadDeadline(time.Now().Add(time.Minute))
		buf := make([]byte, 64)
		n, err = c.Read(buf)
		o.ReadBack = string(buf[:n]) + " " + describeErr(err)
		t.Logf("%+v", o)
		if !o.Short || !strings.Contains(o.Err, "DeadlineExceeded") || o.NextN != 0 || o.NextErr != o.Err {
			t.Errorf("unexpected: %+v", o)
		}
		// The client's send buffer is full: close its socket first, or
		// the close_notify of its Close waits out crypto/tls's 5 s
		// deadline.
		c.NetConn().Close()
		return o
	})
}
