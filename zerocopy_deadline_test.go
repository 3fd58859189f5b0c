//go:build linux

package gatenet_test

// The zero-copy paths under deadlines, partial progress, io.LimitedReader
// and Close (issue 5: "correct with deadlines, partial progress and
// io.LimitedReader"), each scenario run side by side on net and gatenet
// (sockParity): the error's shape, and that the count returned is exactly
// what the peer then receives (by length and SHA-256 of the stream's
// prefix), that a LimitedReader's N and a file's offset moved by that
// count. Counts themselves depend on socket buffers, so the observation
// records the relations, not the numbers.
//
// A deadline here is the mechanism under test, never an assertion about
// time: the copy blocks because the peer stops reading, the deadline ends
// it, and only what it returned is checked.

import (
	"crypto/sha256"
	"io"
	"io/fs"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// zcFileSize is the file the sendfile scenarios copy: far more than the
// small socket buffers below hold, so a stalled peer blocks the copy.
const zcFileSize = 16 << 20

// zcObs is one scenario's outcome.
type zcObs struct {
	Err         sockErrObs
	Partial     bool   // 0 < n < what was offered
	Received    bool   // the peer received exactly n bytes
	PrefixOK    bool   // and they are the stream's first n bytes
	LimitN      bool   // the LimitedReader's N went down by exactly n
	Offset      bool   // the file offset advanced by exactly n
	RestIntact  bool   // the source still holds what the copy did not take
	Note        string // scenario-specific extra
	ZeroCopyRan bool   // (gatenet only) the counted syscall ran
}

// zcSmallBuffers shrinks dst's send and peer's receive buffers so that a
// stalled peer blocks the copy after a few hundred KiB.
func zcSmallBuffers(t testing.TB, dst, peer net.Conn) {
	require.NoError(t, dst.(sockConn).SetWriteBuffer(64<<10))
	require.NoError(t, peer.(sockConn).SetReadBuffer(64<<10))
}

// zcWaitStalled waits until dst's send queue holds data the stalled peer
// has not taken: the copy into dst is then blocked or about to block. A
// short extra pause lets it park; nothing is asserted about time.
func zcWaitStalled(t testing.TB, dst net.Conn) {
	t.Helper()
	for zcQueue(t, dst, unix.SIOCOUTQ) == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// zcExpireWhenStalled runs copy in a goroutine, waits until it is blocked
// on dst (zcWaitStalled), then sets dst's write deadline to now, which
// must end it. The deadline thus fires mid-copy however slow the machine.
func zcExpireWhenStalled(t testing.TB, dst net.Conn, copy func() (int64, error)) (int64, error) {
	t.Helper()
	type res struct {
		n   int64
		err error
	}
	done := make(chan res, 1)
	go func() {
		n, err := copy()
		done <- res{n, err}
	}()
	zcWaitStalled(t, dst)
	require.NoError(t, dst.SetWriteDeadline(time.Now()))
	r := <-done
	return r.n, r.err
}

// zcQueue is SIOCINQ or SIOCOUTQ of c's socket.
func zcQueue(t testing.TB, c net.Conn, req uint) int {
	var q int
	sockRawFD(t, c, func(fd int) {
		var err error
		q, err = unix.IoctlGetInt(fd, req)
		require.NoError(t, err)
	})
	return q
}

// zcStreamFile writes zcFileSize bytes of stream seed to a new file.
func zcStreamFile(t testing.TB, seed byte) string {
	path := t.TempDir() + "/payload"
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = writeStream(f, seed, zcFileSize)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}

// zcFinish half-closes dst, reads everything its peer got, and fills the
// Received/PrefixOK fields.
func zcFinish(t testing.TB, o *zcObs, dst, peer net.Conn, n int64, seed byte, closeDst bool) {
	zcFinishWith(t, o, dst, nil, peer, n, seed, closeDst)
}

// zcFinishWith is zcFinish with the peer's receiver already running (got)
// when the copy must not stall on it; nil starts one now.
func zcFinishWith(t testing.TB, o *zcObs, dst net.Conn, got <-chan hashed, peer net.Conn, n int64, seed byte, closeDst bool) {
	if closeDst {
		dst.Close()
	} else {
		require.NoError(t, dst.(sockConn).CloseWrite())
	}
	if got == nil {
		got = receiveHashed(peer)
	}
	r := <-got
	require.NoError(t, r.err)
	o.Received = r.n == n
	o.PrefixOK = r.sum == streamPrefixHash(seed, n)
	if !o.Received {
		t.Logf("copy returned %d, peer received %d", n, r.n)
	}
}

// TestZeroCopyParitySendfileDeadline: a write deadline fires while a copy
// from a file to a conn is blocked in sendfile(2) on a stalled peer.
// io.Copy(conn, *os.File) goes through (*os.File).WriteTo, and net reports
// the failure as os does, *fs.PathError{Op: "read"}; conn.ReadFrom(file)
// and a LimitedReader report ReadFrom's *net.OpError{Op: "readfrom"}.
func TestZeroCopyParitySendfileDeadline(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 21)
	for _, how := range []string{"io.Copy", "ReadFrom", "LimitedReader"} {
		t.Run(how, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) zcObs {
				c, srv, _ := sockPair(t, s, "tcp4")
				names := udpNames(c, "<C>", srv, "<S>")
				names.add(&net.UnixAddr{Name: path}, "<file>")
				zcSmallBuffers(t, c, srv)
				f, err := os.Open(path)
				require.NoError(t, err)
				defer f.Close()
				before := gatenet.SendfileCalls()
				offered := int64(zcFileSize)
				lr := &io.LimitedReader{R: f, N: zcFileSize - 1000}
				if how == "LimitedReader" {
					offered = lr.N
				}
				n, err := zcExpireWhenStalled(t, c, func() (int64, error) {
					switch how {
					case "io.Copy":
						return io.Copy(c, f)
					case "ReadFrom":
						return c.(io.ReaderFrom).ReadFrom(f)
					}
					return io.Copy(c, lr)
				})
				var o zcObs
				o.Err = sockObserve(err, names)
				o.Partial = n > 0 && n < offered
				o.LimitN = how != "LimitedReader" || lr.N == offered-n
				pos, _ := f.Seek(0, io.SeekCurrent)
				o.Offset = pos == n
				o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
				zcFinish(t, &o, c, srv, n, 21, false)
				return o
			}, func(t *testing.T, s sockStack, o zcObs) {
				if how == "io.Copy" {
					require.Equal(t, "*fs.PathError", o.Err.Type)
					require.Equal(t, "read <file>: i/o timeout", o.Err.Text)
				} else {
					require.Equal(t, "*net.OpError", o.Err.Type)
					require.Equal(t, "readfrom", o.Err.Op)
					require.True(t, o.Err.Timeout)
				}
				require.True(t, o.Err.Deadline, "%+v", o.Err)
				require.True(t, o.Partial && o.Received && o.PrefixOK && o.LimitN && o.Offset && o.ZeroCopyRan, "%+v", o)
			})
		})
	}
}

// TestZeroCopySendfileGatenetFile: io.Copy(conn, *gatenet.File) of a
// regular file takes sendfile(2) too (through the File's WriteTo, as with
// an *os.File), and a deadline mid-copy reports as *os.File's would.
func TestZeroCopySendfileGatenetFile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 28)
	t.Run("Whole", func(t *testing.T) {
		c, srv := testutil.TCPPair(t)
		f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		before := gatenet.SendfileCalls()
		got := receiveHashed(srv)
		n, err := io.Copy(c, f)
		require.NoError(t, err)
		require.EqualValues(t, zcFileSize, n)
		require.Greater(t, gatenet.SendfileCalls(), before, "the sendfile path did not run")
		require.NoError(t, c.CloseWrite())
		r := <-got
		require.NoError(t, r.err)
		require.Equal(t, n, r.n)
		require.Equal(t, streamPrefixHash(28, n), r.sum)
	})
	t.Run("Deadline", func(t *testing.T) {
		c, srv := testutil.TCPPair(t)
		zcSmallBuffers(t, c, srv)
		f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		n, err := zcExpireWhenStalled(t, c, func() (int64, error) { return io.Copy(c, f) })
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "read", pe.Op)
		require.Equal(t, path, pe.Path)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.True(t, n > 0 && n < zcFileSize, "n=%d", n)
		var pos int64
		rc, err := f.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) { pos, _ = unix.Seek(int(fd), 0, io.SeekCurrent) }))
		require.Equal(t, n, pos, "the file offset advanced by what was sent")
		var o zcObs
		zcFinish(t, &o, c, srv, n, 28, false)
		require.True(t, o.Received && o.PrefixOK, "%+v", o)
	})
}

// TestZeroCopyParityLimitedReader: io.Copy(conn, LimitedReader) takes
// exactly N bytes, sets N to 0 and leaves the rest in the source — from a
// file (sendfile) and from a conn (splice).
func TestZeroCopyParityLimitedReader(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 22)
	const limit = 3<<20 + 7
	t.Run("File", func(t *testing.T) {
		sockParity(t, func(t *testing.T, s sockStack) zcObs {
			c, srv, _ := sockPair(t, s, "tcp4")
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			before := gatenet.SendfileCalls()
			got := receiveHashed(srv)
			lr := &io.LimitedReader{R: f, N: limit}
			n, err := io.Copy(c, lr)
			o := zcObs{Err: sockObserve(err, nil), LimitN: lr.N == 0 && n == limit}
			pos, _ := f.Seek(0, io.SeekCurrent)
			o.Offset = pos == n
			o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
			zcFinishWith(t, &o, c, got, srv, n, 22, false)
			return o
		}, func(t *testing.T, s sockStack, o zcObs) {
			require.True(t, o.Err.Nil, "%+v", o.Err)
			require.True(t, o.Received && o.PrefixOK && o.LimitN && o.Offset && o.ZeroCopyRan, "%+v", o)
		})
	})
	t.Run("Conn", func(t *testing.T) {
		sockParity(t, func(t *testing.T, s sockStack) zcObs {
			client, in, _ := sockPair(t, s, "tcp4")
			out, srv, _ := sockPair(t, s, "tcp4")
			sent := make(chan error, 1)
			go func() {
				_, err := writeStream(client, 23, 2*limit)
				sent <- err
			}()
			before := gatenet.SpliceCalls()
			got := receiveHashed(srv)
			lr := &io.LimitedReader{R: in, N: limit}
			n, err := io.Copy(out, lr) // out.ReadFrom(lr): splice
			o := zcObs{Err: sockObserve(err, nil), LimitN: lr.N == 0 && n == limit}
			o.ZeroCopyRan = s.isNet() || gatenet.SpliceCalls() > before
			zcFinishWith(t, &o, out, got, srv, n, 23, false)
			// The rest of the stream is still in the source, in order.
			restc := make(chan hashed, 1)
			go func() {
				h := sha256.New()
				n, err := io.CopyN(h, readerOnly{in}, limit)
				restc <- hashed{n, sum(h), err}
			}()
			require.NoError(t, <-sent)
			rest := <-restc
			require.NoError(t, rest.err)
			whole := make([]byte, 2*limit)
			payloadStream(23).Read(whole)
			o.RestIntact = rest.n == limit && rest.sum == sha256.Sum256(whole[limit:])
			return o
		}, func(t *testing.T, s sockStack, o zcObs) {
			require.True(t, o.Err.Nil, "%+v", o.Err)
			require.True(t, o.Received && o.PrefixOK && o.LimitN && o.RestIntact && o.ZeroCopyRan, "%+v", o)
		})
	})
}

// zcProxy is a proxy's four conns: client → in (proxy) out → srv.
type zcProxy struct {
	client, in, out, srv net.Conn
	names                *sockNames
	sent                 chan error
}

// zcNewProxy connects the four conns; the client streams seed (up to
// limit bytes, 0: until its writes fail) in a goroutine.
func zcNewProxy(t *testing.T, s sockStack, seed byte, limit int64) *zcProxy {
	p := &zcProxy{sent: make(chan error, 1)}
	p.client, p.in, _ = sockPair(t, s, "tcp4")
	p.out, p.srv, _ = sockPair(t, s, "tcp4")
	p.names = udpNames(p.client, "<client>", p.in, "<in>", p.out, "<out>", p.srv, "<srv>")
	if limit == 0 {
		limit = 1 << 40
	}
	go func() {
		_, err := writeStream(p.client, seed, limit)
		p.sent <- err
	}()
	return p
}

// copyInOut is io.Copy(out, in), counting splice calls.
func (p *zcProxy) copyInOut(s sockStack) (int64, error, bool) {
	before := gatenet.SpliceCalls()
	n, err := io.Copy(p.out, p.in)
	return n, err, s.isNet() || gatenet.SpliceCalls() > before
}

// zcCopyResult is what copyInOut returned.
type zcCopyResult struct {
	n   int64
	err error
	ran bool // the zero-copy path ran
}

// copyInOutAsync runs copyInOut in a goroutine and delivers its result.
func (p *zcProxy) copyInOutAsync(s sockStack) <-chan zcCopyResult {
	done := make(chan zcCopyResult, 1)
	go func() {
		n, err, ran := p.copyInOut(s)
		done <- zcCopyResult{n, err, ran}
	}()
	return done
}

// TestZeroCopyParitySpliceDeadlines: conn→conn io.Copy (splice on both
// stacks) ended by a write deadline on the destination (its peer stalls)
// and by a read deadline on the source (the client stops sending).
func TestZeroCopyParitySpliceDeadlines(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	t.Run("WriteDeadline", func(t *testing.T) {
		sockParity(t, func(t *testing.T, s sockStack) zcObs {
			p := zcNewProxy(t, s, 24, 0)
			zcSmallBuffers(t, p.out, p.srv)
			var ran bool
			n, err := zcExpireWhenStalled(t, p.out, func() (n int64, err error) {
				n, err, ran = p.copyInOut(s)
				return n, err
			})
			o := zcObs{Err: sockObserve(err, p.names), Partial: n > 0, ZeroCopyRan: ran}
			zcFinish(t, &o, p.out, p.srv, n, 24, false)
			p.client.Close() // ends the stalled writer
			<-p.sent
			return o
		}, func(t *testing.T, s sockStack, o zcObs) {
			require.Equal(t, "*net.OpError", o.Err.Type)
			require.True(t, o.Err.Deadline && o.Err.Timeout, "%+v", o.Err)
			require.True(t, o.Partial && o.Received && o.PrefixOK && o.ZeroCopyRan, "%+v", o)
		})
	})
	t.Run("ReadDeadline", func(t *testing.T) {
		const sent = 1<<20 + 3
		sockParity(t, func(t *testing.T, s sockStack) zcObs {
			p := zcNewProxy(t, s, 25, sent)
			got := receiveHashed(p.srv)  // the destination side never stalls
			require.NoError(t, <-p.sent) // then the client stays silent
			done := p.copyInOutAsync(s)
			// Once the proxy has taken everything the client sent, its
			// read is blocked (or about to be): expire it.
			for zcQueue(t, p.client, unix.SIOCOUTQ) > 0 || zcQueue(t, p.in, unix.SIOCINQ) > 0 {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			require.NoError(t, p.in.SetReadDeadline(time.Now()))
			r := <-done
			n, err, ran := r.n, r.err, r.ran
			o := zcObs{Err: sockObserve(err, p.names), Partial: n == sent, ZeroCopyRan: ran}
			require.NoError(t, p.out.(sockConn).CloseWrite())
			h := <-got
			require.NoError(t, h.err)
			o.Received, o.PrefixOK = h.n == n, h.sum == streamPrefixHash(25, n)
			return o
		}, func(t *testing.T, s sockStack, o zcObs) {
			require.Equal(t, "*net.OpError", o.Err.Type)
			require.True(t, o.Err.Deadline && o.Err.Timeout, "%+v", o.Err)
			require.True(t, o.Partial && o.Received && o.PrefixOK && o.ZeroCopyRan, "%+v", o)
		})
	})
}

// TestZeroCopyParityCloseDst: closing the destination while the copy is
// blocked on it (its peer stalls) unblocks the copy with net.ErrClosed;
// what it reports written is what the peer gets. Splice (conn→conn) and
// sendfile (file→conn).
func TestZeroCopyParityCloseDst(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	t.Run("Splice", func(t *testing.T) {
		sockParity(t, func(t *testing.T, s sockStack) zcObs {
			p := zcNewProxy(t, s, 26, 0)
			zcSmallBuffers(t, p.out, p.srv)
			done := p.copyInOutAsync(s)
			zcWaitStalled(t, p.out)
			p.out.Close()
			r := <-done
			o := zcObs{Err: sockObserve(r.err, p.names), Partial: r.n > 0, ZeroCopyRan: r.ran}
			zcFinish(t, &o, p.out, p.srv, r.n, 26, true)
			p.client.Close()
			<-p.sent
			return o
		}, func(t *testing.T, s sockStack, o zcObs) {
			require.Equal(t, "*net.OpError", o.Err.Type)
			require.True(t, o.Err.Closed, "%+v", o.Err)
			require.True(t, o.Partial && o.Received && o.PrefixOK && o.ZeroCopyRan, "%+v", o)
		})
	})
	t.Run("Sendfile", func(t *testing.T) {
		path := zcStreamFile(t, 27)
		sockParity(t, func(t *testing.T, s sockStack) zcObs {
			c, srv, _ := sockPair(t, s, "tcp4")
			names := udpNames(c, "<C>", srv, "<S>")
			zcSmallBuffers(t, c, srv)
			f, err := os.Open(path)
			require.NoError(t, err)
			defer f.Close()
			before := gatenet.SendfileCalls()
			type res struct {
				n   int64
				err error
			}
			done := make(chan res, 1)
			go func() {
				n, err := io.Copy(c, f)
				done <- res{n, err}
			}()
			zcWaitStalled(t, c)
			c.Close()
			r := <-done
			o := zcObs{Err: sockObserve(r.err, names), Partial: r.n > 0 && r.n < zcFileSize}
			names.add(&net.UnixAddr{Name: path}, "<file>")
			o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
			pos, _ := f.Seek(0, io.SeekCurrent)
			o.Offset = pos == r.n
			zcFinish(t, &o, c, srv, r.n, 27, true)
			return o
		}, func(t *testing.T, s sockStack, o zcObs) {
			require.Equal(t, "*fs.PathError", o.Err.Type) // io.Copy via (*os.File).WriteTo, as above
			require.True(t, o.Err.Closed, "%+v", o.Err)
			require.True(t, o.Partial && o.Received && o.PrefixOK && o.Offset && o.ZeroCopyRan, "%+v", o)
		})
	})
}
