//go:build linux

package reliability_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Faults: what production does to a network stack. Every wait here is
// bounded by the test's watchdog (a hang detector), never by a wall-clock
// assertion.

const faultWatchdog = 2 * time.Minute

// lingerConn is what net.TCPConn and gatenet.TCPConn share for these tests.
type lingerConn interface {
	net.Conn
	SetLinger(sec int) error
	CloseWrite() error
}

type pairMaker func(t *testing.T) (client, server lingerConn)

func gatenetMaker(t *testing.T) (lingerConn, lingerConn) {
	c, s := tcpPair(t)
	return c, s
}

func netMaker(t *testing.T) (lingerConn, lingerConn) {
	c, s := netTCPPair(t)
	return c, s
}

var makers = []struct {
	name string
	mk   pairMaker
}{{"net", netMaker}, {"gatenet", gatenetMaker}}

// errClass names the class of a read or write error, for comparing net's
// and gatenet's.
func errClass(err error) string {
	switch {
	case err == nil:
		return "nil"
	case errors.Is(err, io.EOF):
		return "EOF"
	case errors.Is(err, syscall.ECONNRESET):
		return "ECONNRESET"
	case errors.Is(err, syscall.EPIPE):
		return "EPIPE"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return "deadline"
	case errors.Is(err, net.ErrClosed):
		return "closed"
	}
	return fmt.Sprintf("other(%T: %v)", err, err)
}

// resetMidRead parks a Read on client, resets the connection from server
// (linger 0, close) and returns the classes of the two reads that follow.
func resetMidRead(t *testing.T, mk pairMaker) (first, second string) {
	c, s := mk(t)
	defer c.Close()
	res := make(chan error, 1)
	go func() {
		var b [64]byte
		_, err := c.Read(b[:])
		res <- err
	}()
	// Give the reader a chance to park (a lower bound only: the reset is
	// reported whether or not it has).
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, s.SetLinger(0))
	require.NoError(t, s.Close())
	err1 := <-res
	var b [64]byte
	_, err2 := c.Read(b[:])
	return errClass(err1), errClass(err2)
}

// resetMidWrite keeps client writing while server, which never reads,
// resets the connection; it returns the class of the write error.
func resetMidWrite(t *testing.T, mk pairMaker) (first, next string) {
	c, s := mk(t)
	defer c.Close()
	res := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		buf := make([]byte, 32<<10)
		once := false
		for {
			_, err := c.Write(buf)
			if !once {
				once = true
				close(started)
			}
			if err != nil {
				res <- err
				return
			}
		}
	}()
	<-started
	time.Sleep(20 * time.Millisecond) // let the writer fill the buffers and park
	require.NoError(t, s.SetLinger(0))
	require.NoError(t, s.Close())
	first = errClass(<-res)
	// Writing on after the reset: EPIPE, the case that raises SIGPIPE
	// when written with write(2) rather than send(MSG_NOSIGNAL).
	_, err := c.Write([]byte("more"))
	return first, errClass(err)
}

func TestFaultPeerReset(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, faultWatchdog)

	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	fence := make(chan os.Signal, 1)
	signal.Notify(fence, syscall.SIGWINCH)
	defer signal.Stop(fence)
	drain := func() int {
		// Signals reach the channel asynchronously, after any grace the
		// scheduler chooses to exceed: a SIGPIPE counted late is counted
		// against the next maker. A SIGPIPE is queued in the runtime by
		// its handler before the write(2) that raised it returns, and the
		// runtime hands queued signals to os/signal in batches, each
		// batch delivered in full before the next is collected. Two
		// fences, each raised once the previous one has arrived, put the
		// second in a later batch than every SIGPIPE raised so far: once
		// it has arrived, they are all in sigs.
		for range 2 {
			require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGWINCH))
			<-fence
		}
		n := 0
		for {
			select {
			case <-sigs:
				n++
			default:
				return n
			}
		}
	}

	type result struct {
		read1, read2, write, write2 string
		sigpipes                    int
	}
	results := map[string]result{}
	for _, m := range makers {
		drain()
		var r result
		t.Run(m.name+"/mid-read", func(t *testing.T) {
			r.read1, r.read2 = resetMidRead(t, m.mk)
			require.Equal(t, "ECONNRESET", r.read1, "first read after a reset")
			require.Equal(t, "EOF", r.read2, "read after ECONNRESET")
		})
		t.Run(m.name+"/mid-write", func(t *testing.T) {
			r.write, r.write2 = resetMidWrite(t, m.mk)
			require.Contains(t, []string{"ECONNRESET", "EPIPE"}, r.write, "write after a reset")
			require.Contains(t, []string{"ECONNRESET", "EPIPE"}, r.write2, "write after the failed write")
		})
		r.sigpipes = drain()
		results[m.name] = r
		t.Logf("%s: read %s then %s; write %s then %s; SIGPIPE delivered %d times", m.name, r.read1, r.read2, r.write, r.write2, r.sigpipes)
	}
	// The process survives either way (the runtime ignores SIGPIPE on
	// descriptors other than 1 and 2). gatenet may raise no more SIGPIPEs
	// than net does for the same sequence of writes.
	require.LessOrEqual(t, results["gatenet"].sigpipes, results["net"].sigpipes, "gatenet raised SIGPIPE where net did not")
	require.Equal(t, results["net"].write2, results["gatenet"].write2)
	require.Equal(t, results["net"].read1, results["gatenet"].read1)
	require.Equal(t, results["net"].read2, results["gatenet"].read2)
	// Without signal.Notify, the EPIPE write must not kill the process.
	signal.Stop(sigs)
	t.Run("gatenet/mid-write/no-notify", func(t *testing.T) {
		first, next := resetMidWrite(t, gatenetMaker)
		require.Contains(t, []string{"ECONNRESET", "EPIPE"}, first)
		require.Equal(t, "EPIPE", next)
	})
	// The write error class depends on whether the writer saw the RST
	// before or after its first failing write (ECONNRESET then EPIPE); both
	// are what net gives, so only the class set is compared.
}

func TestFaultHalfClose(t *testing.T) {
	for _, m := range makers {
		for _, first := range []string{"client-first", "server-first"} {
			t.Run(m.name+"/"+first, func(t *testing.T) {
				testutil.CheckLeaks(t)
				testutil.Watchdog(t, faultWatchdog)
				c, s := m.mk(t)
				defer c.Close()
				defer s.Close()
				a, b := c, s
				if first == "server-first" {
					a, b = s, c
				}
				// a shuts its write side: b reads what a sent, then EOF.
				_, err := a.Write([]byte("from-a"))
				require.NoError(t, err)
				require.NoError(t, a.CloseWrite())
				got, err := io.ReadAll(b)
				require.NoError(t, err)
				require.Equal(t, "from-a", string(got))
				// A second read keeps reporting EOF.
				var one [1]byte
				n, err := b.Read(one[:])
				require.Zero(t, n)
				require.ErrorIs(t, err, io.EOF)
				// a writing again fails (its write side is shut).
				_, err = a.Write([]byte("x"))
				require.Error(t, err)

				// The other direction keeps working, round after round.
				for i := range 3 {
					msg := fmt.Sprintf("from-b-%d", i)
					_, err := b.Write([]byte(msg))
					require.NoError(t, err)
					buf := make([]byte, len(msg))
					_, err = io.ReadFull(a, buf)
					require.NoError(t, err)
					require.Equal(t, msg, string(buf))
				}
				// Until b shuts it too.
				_, err = b.Write([]byte("last"))
				require.NoError(t, err)
				require.NoError(t, b.CloseWrite())
				got, err = io.ReadAll(a)
				require.NoError(t, err)
				require.Equal(t, "last", string(got))
			})
		}
	}
}

func TestFaultStalledReader(t *testing.T) {
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, faultWatchdog)
			c, s := m.mk(t)
			defer c.Close()
			defer s.Close() // s reads one byte, then nothing
			type bufSetter interface {
				SetReadBuffer(int) error
				SetWriteBuffer(int) error
			}
			require.NoError(t, c.(bufSetter).SetWriteBuffer(16<<10))
			require.NoError(t, s.(bufSetter).SetReadBuffer(16<<10))
			// Far more than both buffers hold, even autotuned.
			buf := make([]byte, 32<<20)
			type result struct {
				n   int
				err error
			}
			res := make(chan result, 1)
			go func() {
				n, err := c.Write(buf)
				res <- result{n, err}
			}()
			// The deadline is set only once the Write has written: a
			// deadline that expires before the Write's first write(2)
			// (the scheduler may start it that late) rightly reports 0
			// bytes. s takes one byte, proof that the Write has begun,
			// and reads nothing more.
			var one [1]byte
			_, err := io.ReadFull(s, one[:])
			require.NoError(t, err)
			require.NoError(t, c.SetWriteDeadline(time.Now().Add(200*time.Millisecond)))
			r := <-res
			n, err := r.n, r.err
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			require.True(t, ne.Timeout())
			require.Greater(t, n, 0, "a partial write is reported")
			require.Less(t, n, len(buf))
			t.Logf("%s: wrote %d bytes before the deadline", m.name, n)

			// The deadline is sticky until moved.
			n2, err := c.Write([]byte("x"))
			require.Zero(t, n2)
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		})
	}
}

// TestFaultEMFILE runs TestEMFILEChild in a re-executed test binary, whose
// lowered descriptor limit cannot disturb this process.
func TestFaultEMFILE(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, faultWatchdog)
	out := testutil.RunChild(t, "TestEMFILEChild", "GATENET_EMFILE_CHILD=1")
	require.Contains(t, out, "EMFILE-OK", "child did not report success:\n%s", out)
}

// TestEMFILEChild is TestFaultEMFILE's child; it skips unless re-executed.
func TestEMFILEChild(t *testing.T) {
	if os.Getenv("GATENET_EMFILE_CHILD") != "1" {
		t.Skip("runs only as TestFaultEMFILE's child")
	}
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, faultWatchdog)

	// Listeners and one pending connection on each, made while
	// descriptors are plentiful.
	gln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer gln.Close()
	nln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer nln.Close()
	gPending, err := net.Dial("tcp4", gln.Addr().String())
	require.NoError(t, err)
	defer gPending.Close()
	nPending, err := net.Dial("tcp4", nln.Addr().String())
	require.NoError(t, err)
	defer nPending.Close()

	full := testutil.ExhaustDescriptors(t)

	// At the limit: clean EMFILE, no panic.
	_, _, err = gatenet.Pipe()
	require.ErrorIs(t, err, syscall.EMFILE, "Pipe at the limit")
	_, err = gatenet.Dial("tcp4", gln.Addr().String())
	require.ErrorIs(t, err, syscall.EMFILE, "Dial at the limit")

	acceptErr := func(ln net.Listener) error {
		// Accept must fail at once (as net's does), not park: it runs in a
		// goroutine only so that a hang is reported, not suffered.
		ch := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if c != nil {
				c.Close()
			}
			ch <- err
		}()
		return <-ch
	}
	nerr := acceptErr(nln)
	gerr := acceptErr(gln)
	for name, err := range map[string]error{"net": nerr, "gatenet": gerr} {
		require.Error(t, err, "%s Accept at the limit", name)
		require.ErrorIs(t, err, syscall.EMFILE, "%s Accept at the limit", name)
		var oe *net.OpError
		require.ErrorAs(t, err, &oe, "%s Accept at the limit", name)
		// Temporary is what accept loops (net/http) check.
		require.True(t, oe.Temporary(), "%s Accept error is temporary", name)
	}

	// Free a few: everything works again.
	full.Free(8)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err, "Pipe after freeing descriptors")
	_, err = w.Write([]byte("p"))
	require.NoError(t, err)
	var b [1]byte
	_, err = r.Read(b[:])
	require.NoError(t, err)
	r.Close()
	w.Close()

	c, err := gln.Accept()
	require.NoError(t, err, "Accept after freeing descriptors")
	c.Close()
	c, err = nln.Accept()
	require.NoError(t, err)
	c.Close()

	d, err := gatenet.Dial("tcp4", gln.Addr().String())
	require.NoError(t, err, "Dial after freeing descriptors")
	defer d.Close()
	c, err = gln.Accept()
	require.NoError(t, err)
	_, err = d.Write([]byte("d"))
	require.NoError(t, err)
	_, err = io.ReadFull(c, b[:])
	require.NoError(t, err)
	require.Equal(t, byte('d'), b[0])
	c.Close()

	fmt.Println("EMFILE-OK")
}
