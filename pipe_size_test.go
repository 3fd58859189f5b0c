//go:build linux

package gatenet_test

// PipeConfig's kernel buffer (pipe.go): the default size, explicit and
// refused sizes, and data kept whole through a pipe of the default size.

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// pipeBufSize returns the kernel buffer of f's pipe (F_GETPIPE_SZ), through
// SyscallConn, which leaves f non-blocking where Fd would not.
func pipeBufSize(t *testing.T, f *gatenet.File) int {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	var n int
	var gerr error
	require.NoError(t, rc.Control(func(fd uintptr) { n, gerr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) }))
	require.NoError(t, gerr)
	return n
}

// kernelPipeSize returns the buffer the kernel gives a new pipe: os.Pipe's.
func kernelPipeSize(t *testing.T) int {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	n, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	return n
}

// roundPipeSize is the kernel's rounding of a requested pipe size: a
// power-of-two number of pages.
func roundPipeSize(size int) int {
	page := os.Getpagesize()
	pages := (size + page - 1) / page
	n := 1
	for n < pages {
		n <<= 1
	}
	return n * page
}

// openPipe opens c's pipe and closes it when t ends.
func openPipe(t *testing.T, c gatenet.PipeConfig) (r, w *gatenet.File) {
	t.Helper()
	r, w, err := c.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// requirePipeWorks sends a message through r and w.
func requirePipeWorks(t *testing.T, r, w *gatenet.File) {
	t.Helper()
	_, err := w.Write([]byte("hello"))
	require.NoError(t, err)
	buf := make([]byte, 8)
	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))
}

// Pipe and PipeConfig{} get gatenet's default buffer, on both ends. (An
// unprivileged user past /proc/sys/fs/pipe-user-pages-soft would get less.)
func TestPipeSizeDefault(t *testing.T) {
	testutil.CheckLeaks(t)
	require.Greater(t, gatenet.DefaultPipeSize, kernelPipeSize(t), "the default should be bigger than the kernel's")
	want := roundPipeSize(gatenet.DefaultPipeSize)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	require.Equal(t, want, pipeBufSize(t, r))
	require.Equal(t, want, pipeBufSize(t, w))
	require.NoError(t, r.Close())
	require.NoError(t, w.Close())

	r, w = openPipe(t, gatenet.PipeConfig{})
	require.Equal(t, want, pipeBufSize(t, r))
	require.Equal(t, want, pipeBufSize(t, w))
	requirePipeWorks(t, r, w)
}

// An explicit Size is asked for and rounded as the kernel rounds it; a
// negative one leaves the kernel's default.
func TestPipeSizeExplicit(t *testing.T) {
	testutil.CheckLeaks(t)
	page := os.Getpagesize()
	for _, size := range []int{1, page, page + 1, 100_000, 1 << 20} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			r, w := openPipe(t, gatenet.PipeConfig{Size: size})
			want := roundPipeSize(size)
			require.Equal(t, want, pipeBufSize(t, r))
			require.Equal(t, want, pipeBufSize(t, w))
			requirePipeWorks(t, r, w)
		})
	}
	t.Run("negative", func(t *testing.T) {
		r, w := openPipe(t, gatenet.PipeConfig{Size: -1})
		require.Equal(t, kernelPipeSize(t), pipeBufSize(t, r))
		requirePipeWorks(t, r, w)
	})
}

// A size the kernel refuses leaves the pipe as it is, without an error:
// one beyond what F_SETPIPE_SZ can express (EINVAL, root or not) and, for
// an unprivileged process, one over /proc/sys/fs/pipe-max-size (EPERM;
// root may exceed it).
func TestPipeSizeRefused(t *testing.T) {
	testutil.CheckLeaks(t)
	sizes := []int{1 << 40, 1<<31 + 1}
	if os.Geteuid() != 0 {
		b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
		require.NoError(t, err)
		max, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		sizes = append(sizes, 2*max)
	}
	for _, size := range sizes {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			r, w := openPipe(t, gatenet.PipeConfig{Size: size})
			require.Equal(t, kernelPipeSize(t), pipeBufSize(t, r))
			requirePipeWorks(t, r, w)
		})
	}
}

// setPipeSize is best effort: shrinking a pipe below the data it holds
// (EBUSY) leaves it as it is, data included.
func TestPipeSizeBusy(t *testing.T) {
	testutil.CheckLeaks(t)
	r, w := openPipe(t, gatenet.PipeConfig{})
	before := pipeBufSize(t, w)
	data := bytes.Repeat([]byte("x"), 3*os.Getpagesize())
	_, err := w.Write(data)
	require.NoError(t, err)
	rc, err := w.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) { gatenet.SetPipeSize(int(fd), 1) }))
	require.Equal(t, before, pipeBufSize(t, w))
	got := make([]byte, len(data))
	_, err = io.ReadFull(r, got)
	require.NoError(t, err)
	require.Equal(t, data, got)
}

// A few MB through a pipe of the default size, in chunks of odd sizes,
// arrive whole and in order (the poller strategies each stream through
// pipes in TestFileStressMessages).
func TestPipeDefaultSizeIntegrity(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	data := make([]byte, 6<<20+123)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, roundPipeSize(gatenet.DefaultPipeSize), pipeBufSize(t, w))
	werr := make(chan error, 1)
	go func() {
		defer w.Close()
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n := min(len(rest), []int{1, 4093, 64 << 10, 300_001, 1 << 20}[i%5])
			if _, err := w.Write(rest[:n]); err != nil {
				werr <- err
				return
			}
			rest = rest[n:]
		}
		werr <- nil
	}()
	var got bytes.Buffer
	n, err := io.CopyBuffer(&got, struct{ io.Reader }{r}, make([]byte, 40_000))
	require.NoError(t, err)
	require.NoError(t, <-werr)
	require.Equal(t, int64(len(data)), n)
	require.True(t, bytes.Equal(data, got.Bytes()), "the bytes read differ from those written")
}
