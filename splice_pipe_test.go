//go:build linux

package gatenet_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// Copies between two pipes, side by side with os. os copies pipe to pipe
// through a 32 KiB buffer; gatenet splices straight from one pipe to the
// other. The errors must be os's (the failing end's Read or Write error,
// errno bare), and no byte may leave the source unless it reached the
// destination: where os loses at most its buffer, gatenet loses nothing.

// pipeCopyObs is what a copy between two pipes shows its caller.
type pipeCopyObs struct {
	Err fileErrObs
}

// pipeCopyCase sets up a failure, then copies from src to dst one way.
type pipeCopyCase struct {
	name  string
	setup func(t *testing.T, srcW, dst, dstR fileLike) // srcW holds payload, or is left open and empty (fill false)
	fill  bool
	copy  func(dst, src fileLike) (int64, error)
}

const pipeCopyPayload = 60000 // fits a 64 KiB pipe

func pipeCopyCases() []pipeCopyCase {
	ioCopy := func(dst, src fileLike) (int64, error) { return io.Copy(dst, src) }
	readFrom := func(dst, src fileLike) (int64, error) { return dst.(io.ReaderFrom).ReadFrom(src) }
	writeTo := func(dst, src fileLike) (int64, error) { return src.(io.WriterTo).WriteTo(dst) }
	var cases []pipeCopyCase
	for _, how := range []struct {
		name string
		copy func(dst, src fileLike) (int64, error)
	}{{"io.Copy", ioCopy}, {"ReadFrom", readFrom}, {"WriteTo", writeTo}} {
		cases = append(cases,
			pipeCopyCase{"dst-closed/" + how.name, func(t *testing.T, _, dst, _ fileLike) {
				require.NoError(t, dst.Close())
			}, true, how.copy},
			pipeCopyCase{"dst-reader-gone/" + how.name, func(t *testing.T, _, _, dstR fileLike) {
				require.NoError(t, dstR.Close())
			}, true, how.copy},
			pipeCopyCase{"dst-deadline-past/" + how.name, func(t *testing.T, _, dst, _ fileLike) {
				require.NoError(t, dst.SetWriteDeadline(time.Now().Add(-time.Second)))
			}, true, how.copy},
		)
	}
	// The source's errors: its deadline while it is empty.
	for _, how := range []struct {
		name string
		copy func(dst, src fileLike) (int64, error)
	}{{"io.Copy", ioCopy}, {"ReadFrom", readFrom}} {
		cases = append(cases, pipeCopyCase{"src-deadline/" + how.name, nil, false, how.copy})
	}
	return cases
}

func TestSplicePipeToPipeParity(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	for _, tc := range pipeCopyCases() {
		t.Run(tc.name, func(t *testing.T) {
			run := func(t *testing.T, pipe func() (r, w fileLike)) (obs pipeCopyObs, n int64, left int) {
				srcR, srcW := pipe()
				dstR, dstW := pipe()
				if tc.fill {
					_, err := srcW.Write(bytes.Repeat([]byte{'x'}, pipeCopyPayload))
					require.NoError(t, err)
					require.NoError(t, srcW.Close())
					tc.setup(t, srcW, dstW, dstR)
				} else {
					require.NoError(t, srcR.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
				}
				n, err := tc.copy(dstW, srcR)
				obs.Err = observeFileErr(err)
				if tc.fill {
					require.NoError(t, srcR.SetReadDeadline(time.Time{}))
					rest, err := io.ReadAll(srcR)
					require.NoError(t, err)
					left = len(rest)
				}
				return obs, n, left
			}
			var osObs pipeCopyObs
			var osN int64
			var osLeft int
			t.Run("os", func(t *testing.T) {
				testutil.CheckLeaks(t)
				osObs, osN, osLeft = run(t, func() (fileLike, fileLike) { return newOSPipe(t) })
				require.False(t, osObs.Err.Nil, "os's copy must fail here")
			})
			for _, o := range testutil.Strategies() {
				t.Run("gatenet/"+o.String(), func(t *testing.T) {
					testutil.CheckLeaks(t)
					p := testutil.NewPoller(t, o)
					obs, n, left := run(t, func() (fileLike, fileLike) { return newPipeOn(t, p) })
					require.Equal(t, osObs, obs, "the error differs from os's")
					require.Equal(t, osN, n)
					if tc.fill {
						require.Equal(t, pipeCopyPayload-int(n), left, "bytes that left the source must be in the destination")
						require.GreaterOrEqual(t, left, osLeft)
					}
				})
			}
		})
	}
}

// TestSplicePipeLimitedReaderKeepsSource: a LimitedReader's N goes down by
// what reached the destination, which is what left the source.
func TestSplicePipeLimitedReaderKeepsSource(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{})
	srcR, srcW := newPipeOn(t, p)
	dstR, dstW := newPipeOn(t, p)
	_, err := srcW.Write(bytes.Repeat([]byte{'x'}, pipeCopyPayload))
	require.NoError(t, err)
	require.NoError(t, srcW.Close())
	require.NoError(t, dstR.Close())
	lr := &io.LimitedReader{R: srcR, N: 1000}
	n, err := io.Copy(dstW, lr)
	require.ErrorIs(t, err, unix.EPIPE)
	requirePathError(t, err, "write", "|1", unix.EPIPE)
	require.Zero(t, n)
	require.Equal(t, int64(1000), lr.N)
	rest, err := io.ReadAll(srcR)
	require.NoError(t, err)
	require.Len(t, rest, pipeCopyPayload)
}

// TestSplicePipeWrongEnd: splicing into a pipe's read end fails as os's
// Write there does, naming the destination, and takes nothing.
func TestSplicePipeWrongEnd(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{})
	r1, _ := newPipeOn(t, p)
	r2, w2 := newPipeOn(t, p)
	_, err := w2.Write([]byte("data"))
	require.NoError(t, err)
	_, err = r1.ReadFrom(r2)
	requirePathError(t, err, "write", "|0", unix.EBADF)
	require.NoError(t, w2.Close())
	rest, err := io.ReadAll(r2)
	require.NoError(t, err)
	require.Equal(t, "data", string(rest))
}

// TestSplicePipeChain moves 8 MiB through three pipes, two copies at once,
// with a slow last reader: every byte arrives, in order.
func TestSplicePipeChain(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	p := testutil.NewPoller(t, pollfd.Options{})
	aR, aW := newPipeOn(t, p)
	bR, bW := newPipeOn(t, p)
	cR, cW := newPipeOn(t, p)
	payload := make([]byte, 8<<20)
	for i := range payload {
		payload[i] = byte(i * 7 / 5)
	}
	errs := make(chan error, 3)
	go func() { _, err := aW.Write(payload); aW.Close(); errs <- err }()
	go func() { _, err := io.Copy(bW, aR); bW.Close(); errs <- err }()
	go func() { _, err := io.Copy(cW, bR); cW.Close(); errs <- err }()
	var got bytes.Buffer
	buf := make([]byte, 3000)
	for {
		n, err := cR.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	for range 3 {
		require.NoError(t, <-errs)
	}
	require.True(t, bytes.Equal(payload, got.Bytes()), "8 MiB through two spliced copies arrived changed")
}
