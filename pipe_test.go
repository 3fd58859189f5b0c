//go:build linux

package gatenet_test

// Conformance of gatenet.File with *os.File for pipes (pipe.go, file.go) (stdlib-behaviour.md
// §7 and §11 rows 6-9, 55-58 and 61), each behaviour observed on an os.Pipe
// and on a gatenet pipe under every poller strategy, and compared. Regular
// files, directories and NewFile are in file_newfile_test.go.

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Row 55: names, O_NONBLOCK, FD_CLOEXEC, SetDeadline returns nil.
func TestFilePipeNamesAndFlags(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		RName, WName                   string
		RNonblock, WNonblock           bool
		RCloexec, WCloexec             bool
		SetDL, SetRDL, SetWDL, ClearDL fileErrObs
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		return obs{
			RName: r.Name(), WName: w.Name(),
			RNonblock: fileNonblocking(t, r), WNonblock: fileNonblocking(t, w),
			RCloexec: fileCloexec(t, r), WCloexec: fileCloexec(t, w),
			SetDL:   observeFileErr(r.SetDeadline(time.Now().Add(time.Hour))),
			SetRDL:  observeFileErr(r.SetReadDeadline(time.Now().Add(time.Hour))),
			SetWDL:  observeFileErr(w.SetWriteDeadline(time.Now().Add(time.Hour))),
			ClearDL: observeFileErr(w.SetDeadline(time.Time{})),
		}
	}, func(t *testing.T, o obs) {
		nilErr := observeFileErr(nil)
		require.Equal(t, obs{"|0", "|1", true, true, true, true, nilErr, nilErr, nilErr, nilErr}, o)
	})
}

// Row 56: a read deadline gives PathError{"read","|0",ErrDeadlineExceeded},
// a timeout by os.IsTimeout, but not a net.Error by direct assertion.
func TestFilePipeReadTimeoutError(t *testing.T) {
	testutil.CheckLeaks(t)
	const d = 20 * time.Millisecond
	fileSideBySide(t, func(t *testing.T, r, w fileLike) fileErrObs {
		start := time.Now()
		require.NoError(t, r.SetReadDeadline(start.Add(d)))
		n, err := r.Read(make([]byte, 8))
		require.GreaterOrEqual(t, time.Since(start), d, "returned before the deadline")
		require.Zero(t, n)
		requirePathError(t, err, "read", "|0", os.ErrDeadlineExceeded)
		return observeFileErr(err)
	}, func(t *testing.T, s fileErrObs) {
		require.Equal(t, "read |0: i/o timeout", s.Text)
		require.True(t, s.Deadline && s.IsTimeout)
		require.False(t, s.NetError, "a direct net.Error assertion must fail, as for os")
	})
}

// Row 57: Close unblocks a blocked Read.
func TestFileCloseUnblocksRead(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) fileIOObs {
		ch := goRead(r, make([]byte, 8))
		time.Sleep(20 * time.Millisecond) // let it block (the result is the same if not)
		require.NoError(t, r.Close())
		res := <-ch
		requirePathError(t, res.Err, "read", "|0", os.ErrClosed)
		return fileIOObs{res.N, observeFileErr(res.Err)}
	}, func(t *testing.T, o fileIOObs) {
		require.Zero(t, o.N)
		require.Equal(t, "read |0: file already closed", o.Err.Text)
		require.True(t, o.Err.Closed)
	})
}

// Row 57: Close unblocks a Write blocked on a full pipe, which keeps its
// partial count.
func TestFileCloseUnblocksWrite(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) fileIOObs {
		ch := goWrite(w, make([]byte, 1<<20))
		waitPipeFull(t, r)
		time.Sleep(10 * time.Millisecond)
		require.NoError(t, w.Close())
		res := <-ch
		requirePathError(t, res.Err, "write", "|1", os.ErrClosed)
		return fileIOObs{res.N, observeFileErr(res.Err)}
	}, func(t *testing.T, o fileIOObs) {
		require.Equal(t, pipeCapacity, o.N, "the partial count is kept")
		require.Equal(t, "write |1: file already closed", o.Err.Text)
		require.True(t, o.Err.Closed)
	})
}

type fileIOObs struct {
	N   int
	Err fileErrObs
}

// A second Close returns PathError{"close", name, os.ErrClosed}.
func TestFileCloseTwice(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct{ R1, R2, W1, W2 fileErrObs }
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		o := obs{R1: observeFileErr(r.Close()), W1: observeFileErr(w.Close())}
		errR, errW := r.Close(), w.Close()
		requirePathError(t, errR, "close", "|0", os.ErrClosed)
		requirePathError(t, errW, "close", "|1", os.ErrClosed)
		o.R2, o.W2 = observeFileErr(errR), observeFileErr(errW)
		return o
	}, func(t *testing.T, o obs) {
		require.True(t, o.R1.Nil && o.W1.Nil)
		require.Equal(t, "close |0: file already closed", o.R2.Text)
		require.Equal(t, "close |1: file already closed", o.W2.Text)
	})
}

// Row 58 and §7: after Close, SetDeadline returns the bare "use of closed
// file"; SyscallConn still succeeds, and its methods return that error.
func TestFileDeadlineAndRawConnAfterClose(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		SetDL, SetRDL, SetWDL   fileErrObs
		SyscallConn             fileErrObs
		Control, RawRead, RawWr fileErrObs
		Called                  bool
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		require.NoError(t, r.Close())
		o := obs{
			SetDL:  observeFileErr(r.SetDeadline(time.Now().Add(time.Hour))),
			SetRDL: observeFileErr(r.SetReadDeadline(time.Time{})),
			SetWDL: observeFileErr(r.SetWriteDeadline(time.Now().Add(-time.Hour))),
		}
		rc, err := r.SyscallConn()
		o.SyscallConn = observeFileErr(err)
		require.NotNil(t, rc)
		o.Control = observeFileErr(rc.Control(func(uintptr) { o.Called = true }))
		o.RawRead = observeFileErr(rc.Read(func(uintptr) bool { o.Called = true; return true }))
		o.RawWr = observeFileErr(rc.Write(func(uintptr) bool { o.Called = true; return true }))
		return o
	}, func(t *testing.T, o obs) {
		for _, s := range []fileErrObs{o.SetDL, o.SetRDL, o.SetWDL, o.Control, o.RawRead, o.RawWr} {
			require.Equal(t, "use of closed file", s.Text)
			require.Equal(t, "*errors.errorString", s.Type)
			require.False(t, s.Closed, "not os.ErrClosed")
			require.False(t, s.PathErr, "not a *fs.PathError")
		}
		require.True(t, o.SyscallConn.Nil)
		require.False(t, o.Called)
	})
}

// Row 9: EOF after the writer closes is a bare io.EOF.
func TestFilePipeEOF(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		N1, N2 int
		E1, E2 fileErrObs
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		_, err := w.Write([]byte("ab"))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		buf := make([]byte, 8)
		n1, e1 := r.Read(buf)
		n2, e2 := r.Read(buf)
		require.True(t, e2 == io.EOF, "want io.EOF itself, got %#v", e2)
		return obs{n1, n2, observeFileErr(e1), observeFileErr(e2)}
	}, func(t *testing.T, o obs) {
		require.Equal(t, obs{2, 0, observeFileErr(nil), observeFileErr(io.EOF)}, o)
	})
}

// §7: a Write to a pipe whose reader is closed fails with EPIPE in a
// PathError, and the process survives (no SIGPIPE for fds other than 1, 2).
func TestFilePipeEPIPE(t *testing.T) {
	testutil.CheckLeaks(t)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) fileIOObs {
		require.NoError(t, r.Close())
		n, err := w.Write([]byte("x"))
		requirePathError(t, err, "write", "|1", syscall.EPIPE)
		return fileIOObs{n, observeFileErr(err)}
	}, func(t *testing.T, o fileIOObs) {
		require.Zero(t, o.N)
		require.Equal(t, "write |1: broken pipe", o.Err.Text)
		require.True(t, o.Err.EPIPE)
	})
}

// Rows 6-8: a zero-length Read returns (0, nil) even past its deadline,
// but fails once closed; a zero-length Write checks its deadline.
func TestFileZeroLength(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		ReadExpired, ReadNilClosed, ReadEmptyClosed fileIOObs
		WriteExpired, WriteNilOpen                  fileIOObs
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		var o obs
		require.NoError(t, w.SetDeadline(time.Time{}))
		n, err := w.Write(nil)
		o.WriteNilOpen = fileIOObs{n, observeFileErr(err)}
		require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
		n, err = r.Read(nil)
		o.ReadExpired = fileIOObs{n, observeFileErr(err)}
		require.NoError(t, w.SetWriteDeadline(time.Now().Add(-time.Second)))
		n, err = w.Write(nil)
		o.WriteExpired = fileIOObs{n, observeFileErr(err)}
		require.NoError(t, r.Close())
		n, err = r.Read(nil)
		o.ReadNilClosed = fileIOObs{n, observeFileErr(err)}
		n, err = r.Read([]byte{})
		o.ReadEmptyClosed = fileIOObs{n, observeFileErr(err)}
		return o
	}, func(t *testing.T, o obs) {
		require.Equal(t, fileIOObs{0, observeFileErr(nil)}, o.ReadExpired)
		require.Equal(t, fileIOObs{0, observeFileErr(nil)}, o.WriteNilOpen)
		require.Equal(t, "write |1: i/o timeout", o.WriteExpired.Err.Text)
		require.True(t, o.WriteExpired.Err.Deadline)
		require.Equal(t, "read |0: file already closed", o.ReadNilClosed.Err.Text)
		require.True(t, o.ReadNilClosed.Err.Closed)
		require.Equal(t, o.ReadNilClosed, o.ReadEmptyClosed)
	})
}

// Methods on a nil *File return os.ErrInvalid (Fd: ^uintptr(0)), as on a
// nil *os.File.
func TestFileNilMethods(t *testing.T) {
	testutil.CheckLeaks(t)
	observe := func(f fileLike) []string {
		var out []string
		add := func(what string, err error) {
			out = append(out, what+": "+strconv.FormatBool(err == os.ErrInvalid)+" "+observeFileErr(err).Text)
		}
		_, err := f.Read(make([]byte, 1))
		add("Read", err)
		_, err = f.Read(nil)
		add("Read(nil)", err)
		_, err = f.Write([]byte("x"))
		add("Write", err)
		_, err = f.ReadAt(make([]byte, 1), 0)
		add("ReadAt", err)
		_, err = f.WriteAt([]byte("x"), 0)
		add("WriteAt", err)
		add("SetDeadline", f.SetDeadline(time.Now()))
		add("SetReadDeadline", f.SetReadDeadline(time.Now()))
		add("SetWriteDeadline", f.SetWriteDeadline(time.Now()))
		rc, err := f.SyscallConn()
		add("SyscallConn", err)
		out = append(out, "rc nil: "+strconv.FormatBool(rc == nil))
		fi, err := f.Stat()
		add("Stat", err)
		out = append(out, "fi nil: "+strconv.FormatBool(fi == nil))
		add("Close", f.Close())
		out = append(out, "Fd: "+strconv.FormatUint(uint64(f.Fd()), 16))
		_, err = f.WriteString("x")
		add("WriteString", err)
		_, err = f.Seek(0, io.SeekStart)
		add("Seek", err)
		add("Sync", f.Sync())
		add("Truncate", f.Truncate(0))
		add("Chmod", f.Chmod(0o600))
		add("Chown", f.Chown(-1, -1))
		return out
	}
	want := observe((*os.File)(nil))
	for _, line := range want {
		if !strings.HasPrefix(line, "Fd") && !strings.HasSuffix(line, "nil: true") {
			require.Contains(t, line, ": true invalid argument")
		}
	}
	require.Equal(t, want, observe((*gatenet.File)(nil)))
}

// Stat on a pipe: ModeNamedPipe and a *syscall.Stat_t, as os reports for
// the same descriptor.
func TestFileStatPipe(t *testing.T) {
	testutil.CheckLeaks(t)
	type obs struct {
		Name  string
		Mode  os.FileMode
		IsDir bool
		Size  int64
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		fi, err := r.Stat()
		require.NoError(t, err)
		st, ok := fi.Sys().(*syscall.Stat_t)
		require.True(t, ok, "Sys() is %T", fi.Sys())
		// The same descriptor seen through os.
		dup, err := unix.FcntlInt(uintptr(fileSysfd(t, r)), unix.F_DUPFD_CLOEXEC, 0)
		require.NoError(t, err)
		of := os.NewFile(uintptr(dup), "dup")
		defer of.Close()
		ofi, err := of.Stat()
		require.NoError(t, err)
		require.Equal(t, ofi.Mode(), fi.Mode())
		require.Equal(t, ofi.Sys().(*syscall.Stat_t).Ino, st.Ino)
		require.Equal(t, ofi.Sys().(*syscall.Stat_t).Dev, st.Dev)
		return obs{fi.Name(), fi.Mode(), fi.IsDir(), fi.Size()}
	}, func(t *testing.T, o obs) {
		require.Equal(t, "|0", o.Name)
		require.NotZero(t, o.Mode&os.ModeNamedPipe)
		require.False(t, o.IsDir)
	})
}

// Row 61: Fd() on a pipe end puts it in blocking mode. SetDeadline still
// returns nil but no longer interrupts a Read blocked in the kernel, and
// Close neither waits for nor interrupts it: the Read returns the data
// written afterwards.
func TestFileFdMakesBlocking(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	type obs struct {
		NonblockBefore, NonblockAfter bool
		SetDL, Close                  fileErrObs
		Read                          fileIOObs
		Data                          string
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		var o obs
		o.NonblockBefore = fileNonblocking(t, r)
		fd := r.Fd()
		require.Equal(t, uintptr(fileSysfd(t, r)), fd)
		o.NonblockAfter = fileNonblocking(t, r)
		o.SetDL = observeFileErr(r.SetReadDeadline(time.Now().Add(time.Hour)))
		buf := make([]byte, 8)
		ch := goRead(r, buf)
		waitThreadInSyscall(t, unix.SYS_READ, int(fd))
		require.NoError(t, r.SetReadDeadline(time.Now().Add(-time.Second)))
		requireStillBlocked(t, ch, 50*time.Millisecond, "blocking Read after an expired deadline")
		o.Close = observeFileErr(r.Close())
		requireStillBlocked(t, ch, 20*time.Millisecond, "blocking Read after Close")
		_, err := w.Write([]byte("z"))
		require.NoError(t, err)
		res := <-ch
		o.Read = fileIOObs{res.N, observeFileErr(res.Err)}
		o.Data = string(buf[:res.N])
		return o
	}, func(t *testing.T, o obs) {
		require.True(t, o.NonblockBefore)
		require.False(t, o.NonblockAfter)
		require.True(t, o.SetDL.Nil)
		require.True(t, o.Close.Nil)
		require.Equal(t, fileIOObs{1, observeFileErr(nil)}, o.Read)
		require.Equal(t, "z", o.Data)
	})
}

// waitThreadInSyscall waits until some thread of this process is blocked in
// syscall nr on descriptor fd (/proc/self/task/*/syscall).
func waitThreadInSyscall(t testing.TB, nr, fd int) {
	t.Helper()
	want := strconv.Itoa(nr) + " 0x" + strconv.FormatInt(int64(fd), 16) + " "
	for deadline := time.Now().Add(time.Minute); ; {
		tasks, err := os.ReadDir("/proc/self/task")
		require.NoError(t, err)
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
			if err == nil && bytes.HasPrefix(b, []byte(want)) {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "no thread blocked in syscall %d on fd %d", nr, fd)
		time.Sleep(time.Millisecond)
	}
}

// §3 RawRead: a callback returning false waits for readability, and the
// wait honours the read deadline (bare os.ErrDeadlineExceeded, not a
// PathError: os does not wrap rawConn errors) and Close (bare "use of
// closed file").
func TestFileRawConnWait(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	type obs struct {
		Data            string
		Timeout, Closed fileErrObs
	}
	fileSideBySide(t, func(t *testing.T, r, w fileLike) obs {
		var o obs
		calls := 0
		rc, err := r.SyscallConn()
		require.NoError(t, err)
		buf := make([]byte, 8)
		done := make(chan error, 1)
		go func() {
			done <- rc.Read(func(fd uintptr) bool {
				calls++
				n, err := unix.Read(int(fd), buf)
				if err == unix.EAGAIN {
					return false
				}
				o.Data = string(buf[:max(n, 0)])
				return true
			})
		}()
		time.Sleep(20 * time.Millisecond)
		_, err = w.Write([]byte("raw"))
		require.NoError(t, err)
		require.NoError(t, <-done)
		require.GreaterOrEqual(t, calls, 1)

		require.NoError(t, r.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
		err = rc.Read(func(uintptr) bool { return false })
		require.True(t, err == os.ErrDeadlineExceeded, "want os.ErrDeadlineExceeded itself, got %#v", err)
		o.Timeout = observeFileErr(err)

		require.NoError(t, r.SetReadDeadline(time.Time{}))
		go func() { done <- rc.Read(func(uintptr) bool { return false }) }()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, r.Close())
		o.Closed = observeFileErr(<-done)
		return o
	}, func(t *testing.T, o obs) {
		require.Equal(t, "raw", o.Data)
		require.Equal(t, "i/o timeout", o.Timeout.Text)
		require.Equal(t, "use of closed file", o.Closed.Text)
		require.False(t, o.Closed.PathErr)
	})
}

// TestPollerStartAfterEMFILE: a process out of descriptors when gatenet
// first needs its poller (epoll instances, park slots) gets EMFILE from
// Pipe, not a pipe that quietly lacks deadlines and Close-unblocks-Read,
// and leaks nothing; once descriptors are free again the poller starts,
// as net's sockets work again then. Before, the first failure was every
// later call's, for the life of the process. In a child process, whose
// default poller has not started.
func TestPollerStartAfterEMFILE(t *testing.T) {
	if os.Getenv("GATENET_EMFILE_CHILD") == "" {
		testutil.RunChild(t, "TestPollerStartAfterEMFILE", "GATENET_EMFILE_CHILD=1")
		return
	}
	full := testutil.ExhaustDescriptors(t)
	full.Free(2) // room for the pipe, none for the poller
	before := testutil.OpenFDs(t)
	r, w, err := gatenet.Pipe()
	require.ErrorIs(t, err, syscall.EMFILE, "Pipe while the poller cannot start")
	require.Nil(t, r)
	require.Nil(t, w)
	require.Equal(t, before, testutil.OpenFDs(t), "the pipe's descriptors are closed")

	full.Release()
	r, w, err = gatenet.Pipe()
	require.NoError(t, err, "descriptors are free again")
	defer w.Close()
	require.NoError(t, r.SetReadDeadline(time.Now().Add(time.Millisecond)))
	_, err = r.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "a pipe with deadlines")
	require.NoError(t, r.Close())
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}
