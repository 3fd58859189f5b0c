//go:build linux

package gatenet_test

import (
	"crypto/sha256"
	"io"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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

// TestSpliceFromPipeLimited: ReadFrom of a LimitedReader over a gatenet
// pipe splices exactly N bytes and updates N.
func TestSpliceFromPipeLimited(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	c, s := gatenetTCPPair(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	payload := make([]byte, 3<<20)
	rand.New(rand.NewSource(3)).Read(payload)
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
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	c, s := gatenetTCPPair(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	payload := make([]byte, 4<<20)
	rand.New(rand.NewSource(4)).Read(payload)
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
