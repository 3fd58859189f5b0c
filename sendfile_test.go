//go:build linux

package gatenet_test

import (
	"crypto/sha256"
	"io"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestSendfile: io.Copy from a regular file to a gatenet TCP conn takes
// the sendfile(2) path (counted, not timed) and arrives byte-exact; a
// LimitedReader's N is updated; a pipe source falls back to a buffer.
func TestSendfile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	size := int64(64 << 20)
	if testing.Short() {
		size = 8 << 20
	}
	path := t.TempDir() + "/payload"
	payload := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(payload)
	require.NoError(t, os.WriteFile(path, payload, 0o600))
	want := sha256.Sum256(payload)

	// receive hashes everything the server side reads until EOF.
	receive := func(s io.Reader) <-chan [32]byte {
		ch := make(chan [32]byte, 1)
		go func() {
			h := sha256.New()
			io.Copy(h, s)
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			ch <- sum
		}()
		return ch
	}

	t.Run("os.File", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		got := receive(s)
		before := gatenet.SendfileCalls()
		n, err := io.Copy(c, f)
		require.NoError(t, err)
		require.Equal(t, size, n)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, want, <-got)
		require.Greater(t, gatenet.SendfileCalls(), before, "the sendfile path did not run")
	})
	t.Run("LimitedReader", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Seek(1000, io.SeekStart)
		require.NoError(t, err)
		got := receive(s)
		lr := &io.LimitedReader{R: f, N: 1 << 20}
		before := gatenet.SendfileCalls()
		n, err := c.ReadFrom(lr)
		require.NoError(t, err)
		require.EqualValues(t, 1<<20, n)
		require.EqualValues(t, 0, lr.N)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, sha256.Sum256(payload[1000:1000+1<<20]), <-got)
		require.Greater(t, gatenet.SendfileCalls(), before)
		pos, _ := f.Seek(0, io.SeekCurrent)
		require.EqualValues(t, 1000+1<<20, pos, "the file offset advances as with read(2)")
	})
	t.Run("gatenet.File", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		got := receive(s)
		before := gatenet.SendfileCalls()
		n, err := c.ReadFrom(f)
		require.NoError(t, err)
		require.Equal(t, size, n)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, want, <-got)
		require.Greater(t, gatenet.SendfileCalls(), before)
	})
	t.Run("PipeFallsBack", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		go func() { w.Write(payload[:1<<20]); w.Close() }()
		got := receive(s)
		n, err := c.ReadFrom(r)
		require.NoError(t, err)
		require.EqualValues(t, 1<<20, n)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, sha256.Sum256(payload[:1<<20]), <-got)
	})
}
