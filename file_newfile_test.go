//go:build linux

package gatenet_test

// Files that are not pipes made by Pipe: regular files and directories
// (not pollable: blocking I/O, os.ErrNoDeadline), and NewFile on every kind
// of descriptor number (negative, closed, non-blocking, blocking, fd 1),
// compared with os.OpenFile and os.NewFile (stdlib-behaviour.md §7, §8
// and §11 rows 59, 60 and 62).

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// fileOpener opens a path as *os.File or *gatenet.File.
type fileOpener struct {
	name string
	open func(name string, flag int, perm os.FileMode) (fileLike, error)
	// wrap makes a File of a descriptor (os.NewFile or gatenet.NewFile).
	wrap func(fd uintptr, name string) fileLike
}

func fileOpeners() []fileOpener {
	return []fileOpener{
		{"os",
			func(n string, fl int, p os.FileMode) (fileLike, error) {
				f, err := os.OpenFile(n, fl, p)
				if err != nil {
					return nil, err
				}
				return f, nil
			},
			func(fd uintptr, n string) fileLike { return os.NewFile(fd, n) }},
		{"gatenet",
			func(n string, fl int, p os.FileMode) (fileLike, error) {
				f, err := gatenet.OpenFile(n, fl, p)
				if err != nil {
					return nil, err
				}
				return f, nil
			},
			func(fd uintptr, n string) fileLike { return gatenet.NewFile(fd, n) }},
	}
}

// openersSideBySide runs check once through os's opener and once through
// gatenet's, each in a subtest with leak checks, and requires the two
// observations to be equal (when both subtests got that far).
func openersSideBySide[T any](t *testing.T, check func(t *testing.T, op fileOpener) T) {
	t.Helper()
	var results []T
	for _, op := range fileOpeners() {
		t.Run(op.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			results = append(results, check(t, op))
		})
	}
	if len(results) == 2 {
		require.Equal(t, results[0], results[1], "gatenet differs from os")
	}
}

// blockingIOObs is what a non-pollable (blocking) File shows.
type blockingIOObs struct {
	SetDL, SetRDL, SetWDL fileErrObs
	Nonblock              bool
	WriteN                int
	WriteErr              fileErrObs
	ReadAt                string
	ReadAtErr             fileErrObs
	ReadBack              string
	ReadBackErr, EOFErr   fileErrObs
	Mode                  os.FileMode
	Size                  int64
}

// checkBlockingIOFile observes f, a descriptor in blocking mode, and
// expects what os gives for one (expectBlockingIOFile); reopen opens the
// same file again for reading.
func checkBlockingIOFile(t *testing.T, f fileLike, reopen func() (fileLike, error)) blockingIOObs {
	o := observeBlockingIOFile(t, f, reopen)
	expectBlockingIOFile(t, o)
	return o
}

func observeBlockingIOFile(t *testing.T, f fileLike, reopen func() (fileLike, error)) blockingIOObs {
	var o blockingIOObs
	o.SetDL = observeFileErr(f.SetDeadline(time.Now().Add(time.Hour)))
	o.SetRDL = observeFileErr(f.SetReadDeadline(time.Now().Add(-time.Hour)))
	o.SetWDL = observeFileErr(f.SetWriteDeadline(time.Time{}))
	o.Nonblock = fileNonblocking(t, f)
	var err error
	o.WriteN, err = f.Write([]byte("hello, world"))
	o.WriteErr = observeFileErr(err)
	buf := make([]byte, 5)
	n, err := f.ReadAt(buf, 7)
	o.ReadAt, o.ReadAtErr = string(buf[:n]), observeFileErr(err)
	g, err := reopen()
	require.NoError(t, err)
	all := make([]byte, 64)
	n, err = g.Read(all)
	o.ReadBack, o.ReadBackErr = string(all[:n]), observeFileErr(err)
	_, err = g.Read(all)
	o.EOFErr = observeFileErr(err)
	require.NoError(t, g.Close())
	fi, err := f.Stat()
	require.NoError(t, err)
	o.Mode, o.Size = fi.Mode(), fi.Size()
	return o
}

func expectBlockingIOFile(t *testing.T, o blockingIOObs) {
	for _, s := range []fileErrObs{o.SetDL, o.SetRDL, o.SetWDL} {
		require.True(t, s.NoDL, "SetDeadline returns os.ErrNoDeadline itself: %+v", s)
	}
	require.False(t, o.Nonblock, "a regular file stays blocking")
	require.Equal(t, 12, o.WriteN)
	require.True(t, o.WriteErr.Nil)
	require.Equal(t, "world", o.ReadAt)
	require.True(t, o.ReadAtErr.Nil)
	require.Equal(t, "hello, world", o.ReadBack)
	require.True(t, o.EOFErr.EOF)
	require.True(t, o.Mode.IsRegular())
	require.Equal(t, int64(12), o.Size)
}

// Row 59: a regular file from OpenFile does blocking I/O, and SetDeadline
// returns the bare os.ErrNoDeadline.
func TestFileRegularOpenFile(t *testing.T) {
	testutil.CheckLeaks(t)
	openersSideBySide(t, func(t *testing.T, op fileOpener) blockingIOObs {
		path := filepath.Join(t.TempDir(), "f")
		f, err := op.open(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		require.NoError(t, err)
		closeFilesAtEnd(t, f)
		return checkBlockingIOFile(t, f, func() (fileLike, error) { return op.open(path, os.O_RDONLY, 0) })
	})
}

// Row 59/60: NewFile on a blocking regular file's descriptor.
func TestFileRegularNewFile(t *testing.T) {
	testutil.CheckLeaks(t)
	openersSideBySide(t, func(t *testing.T, op fileOpener) blockingIOObs {
		path := filepath.Join(t.TempDir(), "f")
		created, err := os.Create(path)
		require.NoError(t, err)
		defer created.Close()
		dup, err := unix.FcntlInt(created.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		require.NoError(t, err)
		f := op.wrap(uintptr(dup), path)
		require.NotNil(t, f)
		closeFilesAtEnd(t, f)
		return checkBlockingIOFile(t, f, func() (fileLike, error) { return os.Open(path) })
	})
}

// A directory is not pollable either: blocking, os.ErrNoDeadline, and a
// Read fails with EISDIR.
func TestFileDirectory(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		SetDL    fileErrObs
		Nonblock bool
		ReadErr  fileErrObs
		IsDir    bool
	}
	dir := t.TempDir()
	openersSideBySide(t, func(t *testing.T, op fileOpener) obs {
		f, err := op.open(dir, os.O_RDONLY, 0)
		require.NoError(t, err)
		closeFilesAtEnd(t, f)
		var o obs
		o.SetDL = observeFileErr(f.SetDeadline(time.Now().Add(time.Hour)))
		o.Nonblock = fileNonblocking(t, f)
		_, err = f.Read(make([]byte, 8))
		o.ReadErr = observeFileErr(err)
		fi, err := f.Stat()
		require.NoError(t, err)
		o.IsDir = fi.IsDir()
		require.True(t, o.SetDL.NoDL)
		require.False(t, o.Nonblock)
		require.Equal(t, "read "+dir+": is a directory", o.ReadErr.Text)
		require.Equal(t, "syscall.Errno: is a directory", o.ReadErr.Inner)
		require.True(t, o.IsDir)
		return o
	})
}

// NewFile of a negative descriptor returns nil, as os.NewFile does.
func TestFileNewFileNegative(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, fd := range []uintptr{^uintptr(0), 1 << 63, ^uintptr(0) - 41} {
		require.Nil(t, os.NewFile(fd, "neg"))
		require.Nil(t, gatenet.NewFile(fd, "neg"))
	}
}

// NewFile on a descriptor number that was just closed gives a File whose
// operations fail with EBADF, as os.NewFile's, without panicking.
func TestFileNewFileClosedFd(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		ReadN        int
		Read, Write  fileErrObs
		SetDL, Close fileErrObs
		Close2       fileErrObs
	}
	openersSideBySide(t, func(t *testing.T, op fileOpener) obs {
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
		require.NoError(t, unix.Close(p[1]))
		require.NoError(t, unix.Close(p[0]))
		// Nothing in this test opens a descriptor until f is closed,
		// so the number stays free.
		f := op.wrap(uintptr(p[0]), "closed")
		require.NotNil(t, f)
		var o obs
		var err error
		o.ReadN, err = f.Read(make([]byte, 4))
		o.Read = observeFileErr(err)
		_, err = f.Write([]byte("x"))
		o.Write = observeFileErr(err)
		o.SetDL = observeFileErr(f.SetDeadline(time.Now().Add(time.Hour)))
		o.Close = observeFileErr(f.Close())
		o.Close2 = observeFileErr(f.Close())
		require.Equal(t, "read closed: bad file descriptor", o.Read.Text)
		require.True(t, o.Read.EBADF && o.Read.PathErr)
		require.True(t, o.Close.EBADF)
		require.True(t, o.Close2.Closed)
		return o
	})
}

// Row 60: NewFile on an already non-blocking descriptor is pollable, and
// Fd() leaves O_NONBLOCK set.
func TestFileNewFileNonblocking(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		SetDL          fileErrObs
		Timeout        fileErrObs
		NonblockAfterF bool
	}
	openersSideBySide(t, func(t *testing.T, op fileOpener) obs {
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK))
		r, w := op.wrap(uintptr(p[0]), "r"), op.wrap(uintptr(p[1]), "w")
		closeFilesAtEnd(t, r, w)
		var o obs
		o.SetDL = observeFileErr(r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)))
		_, err := r.Read(make([]byte, 1))
		o.Timeout = observeFileErr(err)
		r.Fd()
		o.NonblockAfterF = fileNonblocking(t, r)
		require.True(t, o.SetDL.Nil)
		require.Equal(t, "read r: i/o timeout", o.Timeout.Text)
		require.True(t, o.NonblockAfterF)
		return o
	})
}

// The documented difference: gatenet.NewFile makes a blocking pipe
// descriptor non-blocking and pollable (deadlines and Close work), where
// os.NewFile leaves it blocking (os.ErrNoDeadline). Fd() restores
// blocking mode, since gatenet set O_NONBLOCK.
func TestFileNewFileBlockingPipe(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	or, ow := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	closeFilesAtEnd(t, or, ow)
	require.True(t, or.SetDeadline(time.Now()) == os.ErrNoDeadline, "os leaves it blocking")
	require.False(t, fileNonblocking(t, or))

	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	r, w := gatenet.NewFile(uintptr(p[0]), "r"), gatenet.NewFile(uintptr(p[1]), "w")
	closeFilesAtEnd(t, r, w)
	require.True(t, fileNonblocking(t, r))
	require.True(t, fileNonblocking(t, w))
	require.NoError(t, r.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err := r.Read(make([]byte, 1))
	requirePathError(t, err, "read", "r", os.ErrDeadlineExceeded)
	require.NoError(t, r.SetReadDeadline(time.Time{}))
	ch := goRead(r, make([]byte, 1))
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, r.Close())
	res := <-ch
	requirePathError(t, res.Err, "read", "r", os.ErrClosed)
	w.Fd()
	require.False(t, fileNonblocking(t, w), "Fd restores the blocking mode gatenet changed")
}

// TestFileNewFileRestoresBlockingOnClose: the blocking mode NewFile
// changed is the open file description's, which other descriptors share
// (a dup here; a shell's terminal in life): Close puts it back, as
// os.NewFile's Close never changed it. A descriptor that came
// non-blocking is left so.
func TestFileNewFileRestoresBlockingOnClose(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, cameNonblocking := range []bool{false, true} {
		flags := unix.O_CLOEXEC
		if cameNonblocking {
			flags |= unix.O_NONBLOCK
		}
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], flags))
		defer unix.Close(p[1])
		kept, err := unix.Dup(p[0]) // shares p[0]'s description
		require.NoError(t, err)
		defer unix.Close(kept)
		nonblocking := func() bool {
			fl, err := unix.FcntlInt(uintptr(kept), unix.F_GETFL, 0)
			require.NoError(t, err)
			return fl&unix.O_NONBLOCK != 0
		}
		f := gatenet.NewFile(uintptr(p[0]), "r")
		require.True(t, nonblocking(), "NewFile made it pollable")
		require.NoError(t, f.SetReadDeadline(time.Now().Add(time.Millisecond)))
		_, err = f.Read(make([]byte, 1))
		requirePathError(t, err, "read", "r", os.ErrDeadlineExceeded)
		require.NoError(t, f.Close())
		require.Equal(t, cameNonblocking, nonblocking(), "Close leaves the description as NewFile found it")
	}
}

// TestFileNewFileSharedDescription: two Files from NewFile on one blocking
// open file description (a descriptor and its dup): the first made it
// non-blocking and the second relies on that, so the first's Close leaves
// it so and the second's deadline still ends its Read; the description
// is blocking again only after the last of them closes, in either order.
func TestFileNewFileSharedDescription(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	for _, firstClosesFirst := range []bool{true, false} {
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
		kept, err := unix.Dup(p[0]) // to read the description's flags at the end
		require.NoError(t, err)
		d, err := unix.Dup(p[0])
		require.NoError(t, err)
		f1 := gatenet.NewFile(uintptr(p[0]), "first")
		f2 := gatenet.NewFile(uintptr(d), "second")
		open, closed := f2, f1
		if !firstClosesFirst {
			open, closed = f1, f2
		}
		require.NoError(t, closed.Close())
		require.NoError(t, open.SetReadDeadline(time.Now().Add(time.Millisecond)))
		_, err = open.Read(make([]byte, 1))
		requirePathError(t, err, "read", open.Name(), os.ErrDeadlineExceeded)
		fl, err := unix.FcntlInt(uintptr(kept), unix.F_GETFL, 0)
		require.NoError(t, err)
		require.NotZero(t, fl&unix.O_NONBLOCK, "non-blocking while a File relies on it")
		require.NoError(t, open.Close())
		fl, err = unix.FcntlInt(uintptr(kept), unix.F_GETFL, 0)
		require.NoError(t, err)
		require.Zero(t, fl&unix.O_NONBLOCK, "blocking again, as NewFile found it")
		unix.Close(kept)
		unix.Close(p[1])
	}
}

// sigpipeHelperEnv makes the test binary act as TestFileStdoutBrokenPipe's
// child: it writes to fd 1 through os.NewFile or gatenet.NewFile.
const sigpipeHelperEnv = "GATENET_TEST_SIGPIPE_CHILD"

// Row 62 and §8, the documented difference: an *os.File on fd 1 writing
// into a broken pipe kills the process with SIGPIPE; a gatenet File on fd 1
// returns EPIPE (as a net conn would) and the process lives on.
func TestFileStdoutBrokenPipe(t *testing.T) {
	if kind := os.Getenv(sigpipeHelperEnv); kind != "" {
		var err error
		switch kind {
		case "os":
			_, err = os.NewFile(1, "stdout").Write([]byte("x"))
		case "gatenet":
			_, err = gatenet.NewFile(1, "stdout").Write([]byte("x"))
		}
		fmt.Fprintf(os.Stderr, "survived: %v\n", err)
		os.Exit(0) // before the test framework writes to the broken stdout
	}
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	for _, kind := range []string{"os", "gatenet"} {
		t.Run(kind, func(t *testing.T) {
			testutil.CheckLeaks(t)
			r, w, err := os.Pipe()
			require.NoError(t, err)
			require.NoError(t, r.Close())
			cmd := exec.Command(os.Args[0], "-test.run=^TestFileStdoutBrokenPipe$", "-test.count=1")
			cmd.Env = append(os.Environ(), sigpipeHelperEnv+"="+kind)
			cmd.Stdout = w
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err = cmd.Run()
			require.NoError(t, w.Close())
			t.Logf("child: %v; stderr: %q", err, stderr.String())
			if kind == "os" {
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
				ws, ok := ee.Sys().(syscall.WaitStatus)
				require.True(t, ok)
				require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGPIPE, "want death by SIGPIPE, got %v", err)
			} else {
				require.NoError(t, err)
				require.Equal(t, "survived: write stdout: broken pipe\n", stderr.String())
			}
		})
	}
}

// TestFileZeroValueClose: Close of a zero File, which no constructor
// made, fails with EINVAL, as a zero os.File's does; it panicked.
func TestFileZeroValueClose(t *testing.T) {
	var std os.File
	var ours gatenet.File
	want := std.Close()
	require.ErrorIs(t, want, syscall.EINVAL)
	require.Equal(t, want, ours.Close())
}
