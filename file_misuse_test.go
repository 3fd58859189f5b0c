//go:build linux

package gatenet_test

// Bad input and misuse, side by side with *os.File: empty and huge
// buffers, the wrong end of a pipe, offsets, every method after Close, a
// File on a descriptor that was never open, and the queueing of concurrent
// Reads (stdlib-behaviour.md §11 rows 1 and 5). Every result must equal
// os's, and nothing may panic.

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// fileOpLog records the outcome of each call, for comparison with os.
type fileOpLog []string

func (l *fileOpLog) add(what string, n int, err error) {
	s := observeFileErr(err)
	*l = append(*l, what+": n="+strconv.Itoa(n)+" "+s.Text+" closed="+strconv.FormatBool(s.Closed)+
		" timeout="+strconv.FormatBool(s.Deadline)+" path="+strconv.FormatBool(s.PathErr)+" "+s.Op+" "+s.Inner)
}

func TestFileMisuseBuffers(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) fileOpLog {
		var l fileOpLog
		n, err := r.Read(nil)
		l.add("Read(nil)", n, err)
		n, err = r.Read([]byte{})
		l.add("Read([]byte{})", n, err)
		n, err = r.Read(make([]byte, 0, 10))
		l.add("Read(cap 10, len 0)", n, err)
		n, err = w.Write(nil)
		l.add("Write(nil)", n, err)
		n, err = w.Write([]byte{})
		l.add("Write([]byte{})", n, err)

		// The wrong end of the pipe.
		n, err = w.Read(make([]byte, 4))
		l.add("Read on the write end", n, err)
		n, err = r.Write([]byte("x"))
		l.add("Write on the read end", n, err)

		// A huge Read buffer returns what is there.
		_, err = w.Write([]byte("small"))
		require.NoError(t, err)
		big := make([]byte, 8<<20)
		n, err = r.Read(big)
		l.add("Read(8 MiB) of 5 bytes", n, err)

		// A huge Write with nobody reading: the partial count and a timeout.
		// The pipe is empty, so n == 0 means the deadline passed before the
		// Write began (a loaded machine): then again, with a longer one.
		testutil.RetrySlow(t, 100*time.Millisecond, "the 8 MiB Write began", func(d time.Duration) bool {
			require.NoError(t, w.SetWriteDeadline(time.Now().Add(d)))
			n, err = w.Write(big)
			return n == 0 && errors.Is(err, os.ErrDeadlineExceeded)
		})
		l.add("Write(8 MiB), short deadline", n, err)
		require.NoError(t, w.SetWriteDeadline(time.Time{}))

		// Offsets: a pipe cannot seek, and negative offsets are refused
		// before any syscall; empty buffers never reach one.
		buf := make([]byte, 4)
		n, err = r.ReadAt(buf, 0)
		l.add("ReadAt(4, 0)", n, err)
		n, err = w.WriteAt([]byte("x"), 0)
		l.add("WriteAt(1, 0)", n, err)
		n, err = r.ReadAt(buf, -1)
		l.add("ReadAt(4, -1)", n, err)
		n, err = w.WriteAt([]byte("x"), -1)
		l.add("WriteAt(1, -1)", n, err)
		n, err = r.ReadAt(nil, 0)
		l.add("ReadAt(nil, 0)", n, err)
		n, err = w.WriteAt(nil, 0)
		l.add("WriteAt(nil, 0)", n, err)
		n, err = r.ReadAt(nil, -5)
		l.add("ReadAt(nil, -5)", n, err)
		return l
	}, func(t *testing.T, l fileOpLog) {
		require.True(t, strings.HasPrefix(l[0], "Read(nil): n=0  "), l[0])
		require.Contains(t, l[5], "read |1: bad file descriptor")
		require.Contains(t, l[6], "write |0: bad file descriptor")
		require.True(t, strings.HasPrefix(l[7], "Read(8 MiB) of 5 bytes: n=5  "), l[7])
		require.Contains(t, l[8], "n="+strconv.Itoa(pipeCapacity)+" write |1: i/o timeout")
		require.Contains(t, l[11], "readat |0: negative offset")
		require.Contains(t, l[12], "writeat |1: negative offset")
	})
}

// observeReadWrite logs Read and Write of f, with buf and with nil.
func observeReadWrite(l *fileOpLog, f fileLike, buf []byte) {
	n, err := f.Read(buf)
	l.add("Read", n, err)
	n, err = f.Read(nil)
	l.add("Read(nil)", n, err)
	n, err = f.Write([]byte("x"))
	l.add("Write", n, err)
	n, err = f.Write(nil)
	l.add("Write(nil)", n, err)
}

// observeAfterClose calls every method of a closed File.
func observeAfterClose(t *testing.T, f fileLike) fileOpLog {
	var l fileOpLog
	buf := make([]byte, 4)
	observeReadWrite(&l, f, buf)
	n, err := f.ReadAt(buf, 0)
	l.add("ReadAt", n, err)
	n, err = f.ReadAt(nil, 0)
	l.add("ReadAt(nil)", n, err)
	n, err = f.ReadAt(buf, -1)
	l.add("ReadAt(-1)", n, err)
	n, err = f.WriteAt([]byte("x"), 0)
	l.add("WriteAt", n, err)
	n, err = f.WriteAt(nil, 0)
	l.add("WriteAt(nil)", n, err)
	l.add("SetDeadline", 0, f.SetDeadline(time.Now().Add(time.Second)))
	l.add("SetReadDeadline", 0, f.SetReadDeadline(time.Time{}))
	l.add("SetWriteDeadline", 0, f.SetWriteDeadline(time.Now().Add(-time.Second)))
	fi, err := f.Stat()
	l.add("Stat", 0, err)
	l = append(l, "Stat FileInfo nil: "+strconv.FormatBool(fi == nil))
	l = append(l, "Fd: "+strconv.FormatUint(uint64(f.Fd()), 16))
	rc, err := f.SyscallConn()
	l.add("SyscallConn", 0, err)
	called := false
	l.add("Control", 0, rc.Control(func(uintptr) { called = true }))
	l.add("RawRead", 0, rc.Read(func(uintptr) bool { called = true; return true }))
	l.add("RawWrite", 0, rc.Write(func(uintptr) bool { called = true; return true }))
	l = append(l, "raw callbacks called: "+strconv.FormatBool(called))
	l.add("Close", 0, f.Close())
	n, err = f.WriteString("x")
	l.add("WriteString", n, err)
	off, err := f.Seek(0, io.SeekStart)
	l.add("Seek", int(off), err)
	l.add("Sync", 0, f.Sync())
	l.add("Truncate", 0, f.Truncate(0))
	l.add("Chmod", 0, f.Chmod(0o600))
	l.add("Chown", 0, f.Chown(-1, -1))
	l = append(l, "Name: "+f.Name())
	return l
}

// Every method after Close.
func TestFileMisuseAfterClose(t *testing.T) {
	testutil.CheckLeaks(t)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) []fileOpLog {
		require.NoError(t, r.Close())
		require.NoError(t, w.Close())
		return []fileOpLog{observeAfterClose(t, r), observeAfterClose(t, w)}
	}, func(t *testing.T, ls []fileOpLog) {
		for _, l := range ls {
			require.Contains(t, l[0], "file already closed closed=true")
			require.Contains(t, l[9], "SetDeadline: n=0 use of closed file closed=false timeout=false path=false")
			require.Equal(t, "Fd: ffffffffffffffff", l[14])
		}
	})
}

// neverOpenedFd is a descriptor number the kernel can never allocate: it
// is not below fs.nr_open, the ceiling of RLIMIT_NOFILE.
func neverOpenedFd(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/nr_open")
	require.NoError(t, err)
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	_, err = unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
	require.ErrorIs(t, err, unix.EBADF)
	return n
}

// A File on a descriptor that was never open: every operation fails as
// os's does (EBADF in a PathError; SetDeadline: os.ErrNoDeadline, as the
// descriptor is not pollable), and nothing panics.
func TestFileMisuseNeverOpened(t *testing.T) {
	testutil.CheckLeaks(t)
	fd := neverOpenedFd(t)
	openersSideBySide(t, func(t *testing.T, op fileOpener) fileOpLog {
		f := op.wrap(uintptr(fd), "ghost")
		require.NotNil(t, f)
		var l fileOpLog
		buf := make([]byte, 4)
		observeReadWrite(&l, f, buf)
		n, err := f.ReadAt(buf, 3)
		l.add("ReadAt", n, err)
		n, err = f.WriteAt([]byte("x"), 3)
		l.add("WriteAt", n, err)
		l.add("SetDeadline", 0, f.SetDeadline(time.Now().Add(time.Second)))
		l.add("SetReadDeadline", 0, f.SetReadDeadline(time.Now().Add(time.Second)))
		_, err = f.Stat()
		l.add("Stat", 0, err)
		l = append(l, "Fd: "+strconv.FormatUint(uint64(f.Fd()), 10))
		rc, err := f.SyscallConn()
		l.add("SyscallConn", 0, err)
		seen := -1
		l.add("Control", 0, rc.Control(func(u uintptr) { seen = int(u) }))
		l = append(l, "Control saw: "+strconv.Itoa(seen))
		l.add("RawRead(true)", 0, rc.Read(func(uintptr) bool { return true }))
		l.add("RawRead(false)", 0, rc.Read(func(uintptr) bool { return false }))
		l.add("Close", 0, f.Close())
		l.add("Close again", 0, f.Close())
		l = append(l, "Name: "+f.Name())

		require.Contains(t, l[0], "read ghost: bad file descriptor")
		require.Contains(t, l[6], "SetDeadline: n=0 file type does not support deadline")
		require.Equal(t, "Fd: "+strconv.Itoa(fd), l[9])
		require.Equal(t, "Control saw: "+strconv.Itoa(fd), l[12])
		require.Contains(t, l[14], "waiting for unsupported file type")
		require.Contains(t, l[15], "close ghost: bad file descriptor")
		require.Contains(t, l[16], "close ghost: file already closed")
		return l
	})
}

// WriteAt on a file opened with O_APPEND is refused, as by os (which
// reads the flag from OpenFile's argument, and from F_GETFL in NewFile).
func TestFileMisuseWriteAtAppend(t *testing.T) {
	testutil.CheckLeaks(t)
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("0123456789"), 0o600))
	openersSideBySide(t, func(t *testing.T, op fileOpener) fileOpLog {
		var l fileOpLog
		f, err := op.open(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		closeFilesAtEnd(t, f)
		n, err := f.WriteAt([]byte("x"), 0)
		l.add("OpenFile(O_APPEND).WriteAt", n, err)
		n, err = f.WriteAt(nil, -1)
		l.add("OpenFile(O_APPEND).WriteAt(nil, -1)", n, err)

		fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		g := op.wrap(uintptr(fd), "appender")
		closeFilesAtEnd(t, g)
		n, err = g.WriteAt([]byte("x"), 0)
		l.add("NewFile(O_APPEND fd).WriteAt", n, err)

		require.Contains(t, l[0], "os: invalid use of WriteAt on file opened with O_APPEND")
		require.Contains(t, l[2], "os: invalid use of WriteAt on file opened with O_APPEND")
		return l
	})
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(b), "nothing was written")
}

// goReads starts k Reads of up to 8 bytes from r, each in a goroutine of
// its own, and gives them time to block (in the poller or queued on the
// read lock, either way); their results arrive on the channel.
func goReads(r fileLike, k int) <-chan ioResult {
	results := make(chan ioResult, k)
	for range k {
		go func() {
			n, err := r.Read(make([]byte, 8))
			results <- ioResult{n, err}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	return results
}

// Row 1: concurrent Reads queue on the read lock and none fails: three
// blocked Reads each return one byte as three single bytes are written.
func TestFileConcurrentReadsQueue(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) []string {
		results := goReads(r, 3)
		var got []string
		for i := range 3 {
			_, err := w.Write([]byte{'a' + byte(i)})
			require.NoError(t, err)
			res := <-results // one Read returns before the next byte is written
			got = append(got, strconv.Itoa(res.N)+" "+observeFileErr(res.Err).Text)
		}
		return got
	}, func(t *testing.T, got []string) {
		require.Equal(t, []string{"1 ", "1 ", "1 "}, got)
	})
}

// Row 5: Close wakes every Read, the one blocked in the poller and those
// queued on the read lock; all return os.ErrClosed.
func TestFileCloseWakesQueuedReads(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) []string {
		results := goReads(r, 3)
		require.NoError(t, r.Close())
		var got []string
		for range 3 {
			res := <-results
			requirePathError(t, res.Err, "read", "|0", os.ErrClosed)
			got = append(got, strconv.Itoa(res.N)+" "+observeFileErr(res.Err).Text)
		}
		slices.Sort(got)
		return got
	}, func(t *testing.T, got []string) {
		want := "0 read |0: file already closed"
		require.Equal(t, []string{want, want, want}, got)
	})
}
