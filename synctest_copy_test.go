//go:build linux

package gatenet_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Zero-copy in bubbles: io.Copy between ends paired in a synctest bubble
// splices and sends files as it does outside one (each call that moved
// bytes wakes the peer's durable wait), so it fails with the same errors,
// and a reader that sleeps on the fake clock between reads paces it.

// copyEnds are the ends of one copy: the test writes into feed and reads
// drain; the copy runs from src to dst.
type copyEnds struct {
	feed     io.WriteCloser
	src      io.Reader
	dst      io.Writer
	drain    io.ReadCloser
	setDL    func(time.Time) error // src's read deadline
	closeAll func()
}

// copyKinds are the copies that splice or sendfile between gatenet ends.
func copyKinds(t *testing.T) map[string]func(t *testing.T) copyEnds {
	tcp := func(t *testing.T) (net.Conn, net.Conn) { return testutil.Pair(t, "tcp", "127.0.0.1:0") }
	return map[string]func(t *testing.T) copyEnds{
		"TCPToTCP": func(t *testing.T) copyEnds {
			a, src := tcp(t)
			dst, b := tcp(t)
			return copyEnds{a, src, dst, b, src.SetReadDeadline, func() { a.Close(); src.Close(); dst.Close(); b.Close() }}
		},
		"TCPToPipe": func(t *testing.T) copyEnds {
			a, src := tcp(t)
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			return copyEnds{a, src, w, r, src.SetReadDeadline, func() { a.Close(); src.Close(); r.Close(); w.Close() }}
		},
		"PipeToTCP": func(t *testing.T) copyEnds {
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			dst, b := tcp(t)
			return copyEnds{w, r, dst, b, r.SetReadDeadline, func() { r.Close(); w.Close(); dst.Close(); b.Close() }}
		},
		"UnixToPipe": func(t *testing.T) copyEnds {
			a, src := testutil.Pair(t, "unix", filepath.Join(t.TempDir(), "s"))
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			return copyEnds{a, src, w, r, src.SetReadDeadline, func() { a.Close(); src.Close(); r.Close(); w.Close() }}
		},
	}
}

// TestSynctestCopySplices: 4 MiB through each copy, read 64 KiB a fake
// millisecond apart, arrives whole, by splice.
func TestSynctestCopySplices(t *testing.T) {
	testutil.CheckLeaks(t)
	payload := bytes.Repeat([]byte("spliced in fake time"), 4<<20/20)
	for name, kind := range copyKinds(t) {
		t.Run(name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				e := kind(t)
				defer e.closeAll()
				go func() { e.feed.Write(payload); e.feed.Close() }()
				copied := make(chan error, 1)
				before := gatenet.SpliceCalls()
				go func() {
					_, err := io.Copy(e.dst, e.src)
					copied <- err
				}()
				got := make([]byte, 0, len(payload))
				buf := make([]byte, 64<<10)
				for len(got) < len(payload) {
					n, err := e.drain.Read(buf)
					require.NoError(t, err)
					got = append(got, buf[:n]...)
					time.Sleep(time.Millisecond)
				}
				require.NoError(t, <-copied)
				require.True(t, bytes.Equal(payload, got))
				require.Greater(t, gatenet.SpliceCalls(), before, "the splice path did not run")
			})
		})
	}
}

// TestSynctestCopyErrors: a copy's failures have the same error chains in
// a bubble as outside one: the source's read deadline on the fake clock,
// and a destination whose reader is gone.
func TestSynctestCopyErrors(t *testing.T) {
	testutil.CheckLeaks(t)
	failures := map[string]func(t *testing.T, e copyEnds) (int64, error){
		"SourceDeadline": func(t *testing.T, e copyEnds) (int64, error) {
			go io.Copy(io.Discard, e.drain)
			_, err := e.feed.Write([]byte("partial"))
			require.NoError(t, err)
			require.NoError(t, e.setDL(time.Now().Add(time.Second)))
			return io.Copy(e.dst, e.src)
		},
		"ReaderGone": func(t *testing.T, e copyEnds) (int64, error) {
			require.NoError(t, e.drain.Close())
			go e.feed.Write(make([]byte, 1<<20))
			return io.Copy(e.dst, e.src)
		},
	}
	for name, kind := range copyKinds(t) {
		for fname, fail := range failures {
			t.Run(name+"/"+fname, func(t *testing.T) {
				run := func(t *testing.T) string {
					e := kind(t)
					defer e.closeAll()
					_, err := fail(t, e)
					require.Error(t, err)
					return errShape(err)
				}
				outside := run(t)
				var inside string
				inBubble(t, func(t *testing.T) { inside = run(t) })
				require.Equal(t, outside, inside)
			})
		}
	}
}

// TestSynctestSendfile: a file sent to a conn whose peer reads a fake
// millisecond apart arrives whole, by sendfile; to a peer that closed it
// fails as outside a bubble, as the file's "read" *fs.PathError.
func TestSynctestSendfile(t *testing.T) {
	testutil.CheckLeaks(t)
	name := filepath.Join(t.TempDir(), "src")
	payload := bytes.Repeat([]byte("sent in fake time.."), 4<<20/20)
	require.NoError(t, os.WriteFile(name, payload, 0o600))
	inBubble(t, func(t *testing.T) {
		c, s := testutil.Pair(t, "tcp", "127.0.0.1:0")
		defer c.Close()
		f, err := os.Open(name)
		require.NoError(t, err)
		defer f.Close()
		before := gatenet.SendfileCalls()
		sent := make(chan error, 1)
		go func() {
			_, err := io.Copy(s, f)
			s.Close()
			sent <- err
		}()
		got := make([]byte, 0, len(payload))
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, <-sent)
		require.True(t, bytes.Equal(payload, got))
		require.Greater(t, gatenet.SendfileCalls(), before, "the sendfile path did not run")
	})
	peerGone := func(t *testing.T) string {
		c, s := testutil.Pair(t, "tcp", "127.0.0.1:0")
		defer s.Close()
		require.NoError(t, c.Close())
		f, err := os.Open(name)
		require.NoError(t, err)
		defer f.Close()
		_, err = io.Copy(s, f)
		require.Error(t, err)
		return errShape(err)
	}
	outside := peerGone(t)
	var inside string
	inBubble(t, func(t *testing.T) { inside = peerGone(t) })
	require.Equal(t, outside, inside)
}
