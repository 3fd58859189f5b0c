//go:build linux

package gatenet_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// A copy between two Files, either package's, is os's: copy_file_range(2)
// first, under both Files' locks, the destination's first. A closed end
// fails the copy before a byte is read from the source, with the
// destination's "write" error whichever end is closed; between regular
// files the kernel copies; the offsets move as os's do.

// copyFile is a File of either package, as the tests below need it.
type copyFile interface {
	io.ReadWriteCloser
	io.Seeker
}

// fileKinds open a path or make a pipe with os's types or gatenet's.
var fileKinds = []struct {
	name string
	open func(path string, flag int) (copyFile, error)
	pipe func() (r, w copyFile, err error)
}{
	{"os",
		func(path string, flag int) (copyFile, error) { return os.OpenFile(path, flag, 0o600) },
		func() (copyFile, copyFile, error) { r, w, err := os.Pipe(); return r, w, err }},
	{"gatenet",
		func(path string, flag int) (copyFile, error) { return gatenet.OpenFile(path, flag, 0o600) },
		func() (copyFile, copyFile, error) { r, w, err := gatenet.Pipe(); return r, w, err }},
}

func TestFileCopyClosedEnd(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	path := filepath.Join(t.TempDir(), "src")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte("0123456789"), 10000), 0o600))
	type outcome struct {
		n      int64
		shape  string
		offset int64 // the source's, after the copy
	}
	run := func(t *testing.T, srcKind, dstKind int, closeSrc bool) outcome {
		src, err := fileKinds[srcKind].open(path, os.O_RDONLY)
		require.NoError(t, err)
		defer src.Close()
		r, w, err := fileKinds[dstKind].pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		if closeSrc {
			src.Close()
		} else {
			w.Close()
		}
		n, err := io.Copy(w, src)
		o := outcome{n: n, shape: errShapeNamed(err)}
		if !closeSrc {
			o.offset, err = src.Seek(0, io.SeekCurrent)
			require.NoError(t, err)
		}
		return o
	}
	for _, closeSrc := range []bool{false, true} {
		end := "destination"
		if closeSrc {
			end = "source"
		}
		t.Run("closed "+end, func(t *testing.T) {
			std := run(t, 0, 0, closeSrc)
			require.Equal(t, int64(0), std.n)
			require.Equal(t, int64(0), std.offset, "os reads nothing")
			for s := range fileKinds {
				for d := range fileKinds {
					if s == 0 && d == 0 {
						continue
					}
					got := run(t, s, d, closeSrc)
					require.Equal(t, std, got, "%s file into a %s pipe", fileKinds[s].name, fileKinds[d].name)
				}
			}
		})
	}
}

// errShapeNamed is errShape with the *fs.PathError's path kept: which end
// an error names matters here.
func errShapeNamed(err error) string {
	if err == nil {
		return ""
	}
	return errShape(err) + " : " + err.Error()
}

func TestFileCopyRegularFiles(t *testing.T) {
	testutil.CheckLeaks(t)
	dir := t.TempDir()
	data := bytes.Repeat([]byte("regular files copy in the kernel "), 40000)
	src := filepath.Join(dir, "src")
	require.NoError(t, os.WriteFile(src, data, 0o600))
	type outcome struct {
		n                 int64
		err               error
		srcOff, dstOff, N int64
		got               []byte
	}
	run := func(t *testing.T, s, d int, limit int64) outcome {
		in, err := fileKinds[s].open(src, os.O_RDONLY)
		require.NoError(t, err)
		defer in.Close()
		_, err = in.Seek(77, io.SeekStart)
		require.NoError(t, err)
		dst := filepath.Join(dir, "dst-"+fileKinds[s].name+"-"+fileKinds[d].name)
		out, err := fileKinds[d].open(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
		require.NoError(t, err)
		defer out.Close()
		_, err = out.Write([]byte("head:"))
		require.NoError(t, err)
		var o outcome
		var r io.Reader = in
		var lr *io.LimitedReader
		if limit >= 0 {
			lr = &io.LimitedReader{R: in, N: limit}
			r = lr
		}
		o.n, o.err = io.Copy(out, r)
		if lr != nil {
			o.N = lr.N
		}
		o.srcOff, _ = in.Seek(0, io.SeekCurrent)
		o.dstOff, _ = out.Seek(0, io.SeekCurrent)
		o.got, err = os.ReadFile(dst)
		require.NoError(t, err)
		return o
	}
	for _, limit := range []int64{-1, 12345, 0} {
		std := run(t, 0, 0, limit)
		require.NoError(t, std.err)
		for s := range fileKinds {
			for d := range fileKinds {
				got := run(t, s, d, limit)
				require.Equal(t, std, got, "%s into %s, limit %d", fileKinds[s].name, fileKinds[d].name, limit)
			}
		}
	}
}

// TestFileCopyNeverWaitsHoldingALock: a copy from an *os.File whose lock
// another reader holds waits for that lock holding nothing of the gatenet
// File's, so the File's Close does not wait for the os reader.
func TestFileCopyNeverWaitsHoldingALock(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	or, ow, err := os.Pipe()
	require.NoError(t, err)
	defer or.Close()
	defer ow.Close()
	gr, gw, err := gatenet.Pipe()
	require.NoError(t, err)
	defer gr.Close()
	read := make(chan error, 1)
	go func() { // holds or's read lock until ow writes
		_, err := or.Read(make([]byte, 1))
		read <- err
	}()
	copied := make(chan error, 1)
	go func() {
		_, err := io.Copy(gw, or)
		copied <- err
	}()
	require.Eventually(t, func() bool { // the copy waits for or's lock
		buf := make([]byte, 1<<20)
		stacks := buf[:runtime.Stack(buf, true)]
		return bytes.Contains(stacks, []byte("osLocked.func")) && bytes.Contains(stacks, []byte("fdMutex).rwlock"))
	}, time.Minute, time.Millisecond)
	require.NoError(t, gw.Close()) // returns: the copy holds nothing of gw's
	_, err = ow.Write([]byte("xy"))
	require.NoError(t, err)
	require.NoError(t, <-read)
	require.ErrorIs(t, <-copied, os.ErrClosed)
}
