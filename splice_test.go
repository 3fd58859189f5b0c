//go:build linux

package gatenet_test

import (
	"crypto/sha256"
	"io"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestSpliceProxy: io.Copy between two gatenet TCP conns (a proxy) runs
// on splice(2) — counted, not timed — and every byte arrives.
func TestSpliceProxy(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	size := 64 << 20
	if testing.Short() {
		size = 8 << 20
	}
	payload := make([]byte, size)
	rand.New(rand.NewSource(2)).Read(payload)
	want := sha256.Sum256(payload)

	client, proxyIn := gatenetTCPPair(t)
	proxyOut, server := gatenetTCPPair(t)

	got := make(chan [32]byte, 1)
	go func() {
		h := sha256.New()
		io.Copy(h, server)
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		got <- sum
	}()
	proxied := make(chan error, 1)
	before := gatenet.SpliceCalls()
	go func() {
		n, err := io.Copy(proxyOut, proxyIn) // proxyIn.WriteTo(proxyOut): splice
		if err == nil && n != int64(size) {
			err = io.ErrShortWrite
		}
		proxyOut.CloseWrite()
		proxied <- err
	}()
	_, err := client.Write(payload)
	require.NoError(t, err)
	require.NoError(t, client.CloseWrite())
	require.NoError(t, <-proxied)
	require.Equal(t, want, <-got)
	require.Greater(t, gatenet.SpliceCalls(), before, "the splice path did not run")
}

// splicePipeFixture is what the pipe tests start from: leak checks and a
// watchdog, a gatenet TCP pair, a gatenet pipe (both closed at the end),
// and size random bytes from seed to send through them.
func splicePipeFixture(t *testing.T, seed int64, size int) (c, s *gatenet.TCPConn, r, w *gatenet.File, payload []byte) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	c, s = gatenetTCPPair(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	payload = make([]byte, size)
	rand.New(rand.NewSource(seed)).Read(payload)
	return c, s, r, w, payload
}

// TestSpliceFromPipeLimited: ReadFrom of a LimitedReader over a gatenet
// pipe splices exactly N bytes and updates N.
func TestSpliceFromPipeLimited(t *testing.T) {
	c, s, r, w, payload := splicePipeFixture(t, 3, 3<<20)
	go w.Write(payload)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(s)
		got <- b
	}()
	before := gatenet.SpliceCalls()
	lr := &io.LimitedReader{R: r, N: 2 << 20}
	n, err := c.ReadFrom(lr)
	require.NoError(t, err)
	require.EqualValues(t, 2<<20, n)
	require.EqualValues(t, 0, lr.N)
	require.NoError(t, c.CloseWrite())
	require.Equal(t, payload[:2<<20], <-got)
	require.Greater(t, gatenet.SpliceCalls(), before)
	// The rest is still in the pipe, readable normally.
	rest := make([]byte, 1<<20)
	_, err = io.ReadFull(r, rest)
	require.NoError(t, err)
	require.Equal(t, payload[2<<20:], rest)
}

// TestSpliceFileToConn: io.Copy from a gatenet pipe to a gatenet conn, and
// from a conn into a pipe, splice in both directions.
func TestSpliceFileToConn(t *testing.T) {
	c, s, r, w, payload := splicePipeFixture(t, 4, 4<<20)
	go func() { w.Write(payload); w.Close() }()

	// Conn → second pipe, read back through it.
	r2, w2, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r2.Close()
	toPipe := make(chan error, 1)
	go func() {
		_, err := io.Copy(w2, s) // w2.ReadFrom(s): splice
		w2.Close()
		toPipe <- err
	}()
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r2)
		got <- b
	}()
	before := gatenet.SpliceCalls()
	n, err := io.Copy(c, r) // r.WriteTo(c): splice
	require.NoError(t, err)
	require.EqualValues(t, len(payload), n)
	require.NoError(t, c.CloseWrite())
	require.NoError(t, <-toPipe)
	require.Equal(t, payload, <-got)
	require.Greater(t, gatenet.SpliceCalls(), before)
}

// TestSpliceParityDeadlines: conn→conn io.Copy (splice on both
// stacks) ended by a write deadline on the destination (its peer stalls)
// and by a read deadline on the source (the client stops sending).
func TestSpliceParityDeadlines(t *testing.T) {
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

// TestSpliceParityLimitedReader: io.Copy(conn, LimitedReader) from a
// conn (splice) takes exactly N bytes, sets N to 0 and leaves the rest in
// the source, in order.
func TestSpliceParityLimitedReader(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	const limit = zcLimit
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
}

// TestSpliceParityCloseDst: closing the destination while a conn→conn
// copy (splice) is blocked on it (its peer stalls) unblocks the copy with
// net.ErrClosed; what it reports written is what the peer gets.
func TestSpliceParityCloseDst(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
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
}

// TestSpliceLargeProxy: io.Copy between two gatenet TCP conns (a proxy)
// runs on splice(2) and every byte arrives.
func TestSpliceLargeProxy(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	size := zeroCopyLargeSize()
	client, proxyIn := testutil.TCPPair(t)
	proxyOut, server := testutil.TCPPair(t)

	got := receiveHashed(server)
	type copied struct {
		n   int64
		err error
	}
	proxied := make(chan copied, 1)
	before := gatenet.SpliceCalls()
	go func() {
		n, err := io.Copy(proxyOut, proxyIn) // proxyIn.WriteTo(proxyOut): splice
		proxyOut.CloseWrite()
		proxied <- copied{n, err}
	}()
	want, err := writeStream(client, 12, size)
	require.NoError(t, err)
	require.NoError(t, client.CloseWrite())
	p := <-proxied
	require.NoError(t, p.err)
	require.Equal(t, size, p.n)
	calls := gatenet.SpliceCalls() - before
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, size, r.n)
	require.Equal(t, want, r.sum, "SHA-256 of what arrived")
	// Every byte passes through at least one drain and one pump call.
	require.GreaterOrEqual(t, calls, 2*(size/(1<<20)), "the splice path did not carry the stream")
	t.Logf("%d MiB in %d splice calls", size>>20, calls)
}

const proxyChunk = 128 << 10

// BenchmarkProxy streams 128 KiB writes from a client through a proxy
// (io.Copy from the accepted conn to a conn dialled to the server, both of
// the same stack) to a server goroutine that discards them.
func BenchmarkProxy(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchProxy(b, s) })
	}
}

func benchProxy(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	client, proxyIn := tcpPair(b, s)
	proxyOut, server := tcpPair(b, s)

	readDone := discardReader(server, proxyChunk)
	type copyResult struct {
		n   int64
		err error
	}
	proxyDone := make(chan copyResult, 1)
	go func() {
		n, err := io.Copy(proxyOut, proxyIn)
		proxyIn.Close()
		proxyOut.Close() // the server reads EOF
		proxyDone <- copyResult{n, err}
	}()

	splices0 := gatenet.SpliceCalls()
	writeChunks(b, client, proxyChunk)
	if err := client.Close(); err != nil {
		b.Errorf("closing the client: %v", err)
	}
	res := <-readDone // the tail still in flight counts
	b.StopTimer()
	pres := <-proxyDone
	if s.name == "gatenet" && gatenet.SpliceCalls() == splices0 {
		b.Errorf("the proxy copied without splice(2)")
	}
	want := int64(b.N) * proxyChunk
	if pres.err != nil {
		b.Errorf("proxy: %v", pres.err)
	}
	if pres.n != want {
		b.Errorf("proxy copied %d bytes, want %d", pres.n, want)
	}
	if res.Err != nil {
		b.Errorf("server: %v", res.Err)
	}
	if res.N != want {
		b.Errorf("server got %d bytes, want %d", res.N, want)
	}
}
