//go:build linux

package gatenet_test

// The helpers the File tests share: the common interface of
// *os.File and *gatenet.File, the side-by-side runner (the same check on an
// os.Pipe and on a gatenet pipe under every poller strategy), and
// observeFileErr, the description of an error the comparisons are made on.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// fileLike is the part of *os.File's API that *gatenet.File mirrors.
type fileLike interface {
	io.ReadWriteCloser
	io.ReaderAt
	io.WriterAt
	Name() string
	Fd() uintptr
	Stat() (os.FileInfo, error)
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
	SyscallConn() (syscall.RawConn, error)
	io.StringWriter
	io.Seeker
	Sync() error
	Truncate(size int64) error
	Chmod(mode os.FileMode) error
	Chown(uid, gid int) error
}

var (
	_ fileLike = (*os.File)(nil)
	_ fileLike = (*gatenet.File)(nil)
)

// closeFilesAtEnd closes fs when t ends; a test that closed them already just
// gets the ignored "already closed" error.
func closeFilesAtEnd(t testing.TB, fs ...fileLike) {
	t.Helper()
	t.Cleanup(func() {
		for _, f := range fs {
			f.Close()
		}
	})
}

// newOSPipe is os.Pipe, closed when t ends.
func newOSPipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	closeFilesAtEnd(t, r, w)
	return r, w
}

// newPipeOn is a gatenet pipe on p with the kernel's buffer (PipeConfig
// Size -1), os.Pipe's, so that what the tests observe (partial counts,
// pipeCapacity) compares with os; closed when t ends. Call it after
// testutil.NewPoller, so the Files close before the poller does.
// TestPipeSize* and TestPipeDefaultSizeIntegrity cover the default size.
func newPipeOn(t testing.TB, p *pollfd.Poller) (r, w *gatenet.File) {
	t.Helper()
	r, w, err := gatenet.PipeConfigOn(gatenet.PipeConfig{Size: -1}, p)
	require.NoError(t, err)
	closeFilesAtEnd(t, r, w)
	return r, w
}

// eachFileStrategy runs fn in a subtest per poller strategy, with leak
// checks and a fresh poller that is closed after everything fn registers.
var eachFileStrategy = testutil.EachStrategy

// fileSideBySide runs check on an os.Pipe ("os") and on a gatenet pipe under
// every poller strategy ("gatenet/<strategy>"). expect states what the
// observation must be, and is applied to os's too, so the expectation is
// itself checked against the standard library; every gatenet observation
// must then equal os's exactly.
func fileSideBySide[T any](t *testing.T, check func(t *testing.T, r, w fileLike) T, expect func(t *testing.T, obs T)) {
	t.Helper()
	var osObs T
	osOK := t.Run("os", func(t *testing.T) {
		testutil.CheckLeaks(t)
		r, w := newOSPipe(t)
		osObs = check(t, r, w)
		expect(t, osObs)
	})
	for _, o := range testutil.Strategies() {
		t.Run("gatenet/"+o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			p := testutil.NewPoller(t, o)
			r, w := newPipeOn(t, p)
			obs := check(t, r, w)
			expect(t, obs)
			if osOK {
				require.Equal(t, osObs, obs, "gatenet differs from os")
			}
		})
	}
}

// fileErrObs is everything a caller can observe about an error, in a
// comparable form.
type fileErrObs struct {
	Nil       bool
	Text      string
	Type      string // dynamic type
	PathErr   bool   // a *fs.PathError
	Op, Path  string // its fields
	Inner     string // %T: %v of its Err
	Closed    bool   // errors.Is(err, os.ErrClosed)
	Deadline  bool   // errors.Is(err, os.ErrDeadlineExceeded)
	IsTimeout bool   // os.IsTimeout
	NetError  bool   // a direct err.(net.Error) assertion succeeds
	EOF       bool   // err == io.EOF (identity)
	NoDL      bool   // err == os.ErrNoDeadline (identity)
	Invalid   bool   // err == os.ErrInvalid (identity)
	EPIPE     bool
	EBADF     bool
}

func observeFileErr(err error) fileErrObs {
	if err == nil {
		return fileErrObs{Nil: true}
	}
	s := fileErrObs{
		Text:      err.Error(),
		Type:      fmt.Sprintf("%T", err),
		Closed:    errors.Is(err, os.ErrClosed),
		Deadline:  errors.Is(err, os.ErrDeadlineExceeded),
		IsTimeout: os.IsTimeout(err),
		EOF:       err == io.EOF,
		NoDL:      err == os.ErrNoDeadline,
		Invalid:   err == os.ErrInvalid,
		EPIPE:     errors.Is(err, syscall.EPIPE),
		EBADF:     errors.Is(err, syscall.EBADF),
	}
	_, s.NetError = err.(net.Error)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		s.PathErr = true
		s.Op, s.Path = pe.Op, pe.Path
		s.Inner = fmt.Sprintf("%T: %v", pe.Err, pe.Err)
	}
	return s
}

// requirePathError asserts err is exactly &fs.PathError{op, path, inner}
// (inner compared by identity).
func requirePathError(t testing.TB, err error, op, path string, inner error) {
	t.Helper()
	pe, ok := err.(*fs.PathError)
	require.True(t, ok, "want *fs.PathError, got %T: %v", err, err)
	require.Equal(t, op, pe.Op)
	require.Equal(t, path, pe.Path)
	require.True(t, pe.Err == inner, "inner error: want %v, got %T: %v", inner, pe.Err, pe.Err)
}

// fileSysfd returns f's descriptor through SyscallConn().Control, which, unlike
// Fd, leaves O_NONBLOCK alone.
func fileSysfd(t testing.TB, f fileLike) int {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	fd := -1
	require.NoError(t, rc.Control(func(u uintptr) { fd = int(u) }))
	return fd
}

func fileNonblocking(t testing.TB, f fileLike) bool {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(fileSysfd(t, f)), unix.F_GETFL, 0)
	require.NoError(t, err)
	return fl&unix.O_NONBLOCK != 0
}

func fileCloexec(t testing.TB, f fileLike) bool {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(fileSysfd(t, f)), unix.F_GETFD, 0)
	require.NoError(t, err)
	return fl&unix.FD_CLOEXEC != 0
}

// pipeCapacity is what a pipe with the kernel's default buffer holds (F_GETPIPE_SZ of a fresh pipe).
const pipeCapacity = 65536

// waitPipeFull waits until the pipe read by r holds pipeCapacity bytes (TIOCINQ, alias FIONREAD):
// a writer is then blocked for space.
func waitPipeFull(t testing.TB, r fileLike) {
	t.Helper()
	fd := fileSysfd(t, r)
	for deadline := time.Now().Add(time.Minute); ; {
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
		require.NoError(t, err)
		if n >= pipeCapacity {
			return
		}
		require.True(t, time.Now().Before(deadline), "pipe never filled (%d bytes)", n)
		time.Sleep(time.Millisecond)
	}
}

// fileType is f's type bits (fs.ModeNamedPipe, fs.ModeCharDevice, …), from
// its Stat.
func fileType(t *testing.T, f fileLike) fs.FileMode {
	t.Helper()
	fi, err := f.Stat()
	require.NoError(t, err)
	return fi.Mode().Type()
}
