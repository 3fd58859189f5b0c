//go:build linux

package gatenet_test

// Helpers for the zero-copy tests and benchmarks (sendfile_test.go,
// splice_test.go). Their scenarios run under deadlines, partial progress,
// io.LimitedReader and Close, side by side on net and gatenet
// (sockParity), and observe the error's shape, and that the count returned is exactly
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
	"hash"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/benchharness"
)

// zcFileSize is the file the sendfile scenarios copy: far more than the
// small socket buffers below hold, so a stalled peer blocks the copy.
const zcFileSize = 16 << 20

// zcLimit is the LimitedReader tests' N: not a multiple of any buffer.
const zcLimit = 3<<20 + 7

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

// zeroCopyLargeSize is the big transfers' size (TestSendfileLarge,
// TestSpliceLargeProxy): 256 MiB, 32 MiB with -short. Nothing is buffered
// whole: the payload is a ChaCha8 stream (payloadStream), written in
// chunks while the sender hashes it, and the receiver hashes as it reads.
func zeroCopyLargeSize() int64 {
	if testing.Short() {
		return 32 << 20
	}
	return 256 << 20
}

// payloadStream is a deterministic byte stream: the same seed gives the
// same bytes, generated on the fly.
func payloadStream(seed byte) io.Reader {
	return rand.NewChaCha8([32]byte{seed, 'g', 'a', 't', 'e'})
}

// writeStream copies size bytes of the stream to w in 1 MiB writes
// (hiding w's ReadFrom, so no zero-copy path is involved on this side),
// hashing what it wrote.
func writeStream(w io.Writer, seed byte, size int64) ([32]byte, error) {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	src := payloadStream(seed)
	for left := size; left > 0; {
		chunk := buf[:min(left, int64(len(buf)))]
		src.Read(chunk)
		h.Write(chunk)
		if _, err := w.Write(chunk); err != nil {
			return [32]byte{}, err
		}
		left -= int64(len(chunk))
	}
	return sum(h), nil
}

// streamPrefixHash is the SHA-256 of the stream's first n bytes.
func streamPrefixHash(seed byte, n int64) [32]byte {
	h := sha256.New()
	io.CopyN(h, payloadStream(seed), n)
	return sum(h)
}

func sum(h hash.Hash) (s [32]byte) {
	copy(s[:], h.Sum(nil))
	return s
}

// hashed is what a receiver read: how many bytes and their SHA-256.
type hashed struct {
	n   int64
	sum [32]byte
	err error
}

// receiveHashed hashes everything r yields until EOF, streaming.
func receiveHashed(r io.Reader) <-chan hashed {
	ch := make(chan hashed, 1)
	go func() {
		h := sha256.New()
		n, err := io.CopyBuffer(h, readerOnly{r}, make([]byte, 1<<20))
		ch <- hashed{n, sum(h), err}
	}()
	return ch
}

// readerOnly hides a conn's WriteTo from io.Copy.
type readerOnly struct{ io.Reader }

// discardReader is benchharness.Drain that also closes c once drained.
func discardReader(c net.Conn, bufSize int) <-chan benchharness.Drained {
	done := make(chan benchharness.Drained, 1)
	drained := benchharness.Drain(c, bufSize)
	go func() {
		r := <-drained
		c.Close()
		done <- r
	}()
	return done
}

// closeAndCheckDrained ends a streaming benchmark: it closes the writer c,
// waits for the reader (discardReader, or benchharness.Drain) to drain the
// rest, stops the timer and checks that the reader got want bytes.
func closeAndCheckDrained(b *testing.B, c io.Closer, readDone <-chan benchharness.Drained, want int64) {
	b.Helper()
	if err := c.Close(); err != nil {
		b.Errorf("closing the writer: %v", err)
	}
	res := <-readDone
	b.StopTimer()
	if res.Err != nil {
		b.Errorf("reader: %v", res.Err)
	}
	if res.N != want {
		b.Errorf("reader got %d bytes, want %d", res.N, want)
	}
}
