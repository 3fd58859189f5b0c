//go:build linux

package gatenet_test

// WriteString, Seek, Sync, Truncate, Chmod and Chown (file_ops.go) side by
// side with *os.File: on a pipe (where the kernel refuses most of them), on
// a regular file (where they all work), and on a FIFO. Every result must
// equal os's; closed and nil Files are covered with the other methods in
// TestFileMisuseAfterClose and TestFileNilMethods.

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// noErr is how a fileOpLog line ends for a nil error.
const noErr = "  closed=false timeout=false path=false  "

// observeFileOps runs each call on f and logs what it returned, with the
// mode and size Stat reports after it.
func observeFileOps(t *testing.T, f fileLike) fileOpLog {
	t.Helper()
	var l fileOpLog
	stat := func(after string) {
		fi, err := f.Stat()
		require.NoError(t, err)
		l = append(l, "after "+after+": mode "+fi.Mode().String()+" size "+strconv.FormatInt(fi.Size(), 10))
	}
	n, err := f.WriteString("hello, world")
	l.add("WriteString", n, err)
	off, err := f.Seek(0, io.SeekCurrent)
	l.add("Seek(0, current)", int(off), err)
	off, err = f.Seek(7, io.SeekStart)
	l.add("Seek(7, start)", int(off), err)
	off, err = f.Seek(-1, io.SeekStart)
	l.add("Seek(-1, start)", int(off), err)
	off, err = f.Seek(0, 42)
	l.add("Seek(0, 42)", int(off), err)
	l.add("Truncate(5)", 0, f.Truncate(5))
	stat("Truncate")
	off, err = f.Seek(0, io.SeekEnd)
	l.add("Seek(0, end)", int(off), err)
	l.add("Sync", 0, f.Sync())
	l.add("Chmod(0640|setgid)", 0, f.Chmod(0o640|os.ModeSetgid))
	stat("Chmod")
	l.add("Chmod(0600)", 0, f.Chmod(0o600))
	l.add("Chown(uid, gid)", 0, f.Chown(os.Getuid(), os.Getgid()))
	l.add("Chown(-1, -1)", 0, f.Chown(-1, -1))
	return l
}

func TestFileOpsPipe(t *testing.T) {
	testutil.CheckLeaks(t)
	fileSideBySide(t, func(t *testing.T, r, w fileLike) []fileOpLog {
		ls := []fileOpLog{observeFileOps(t, w)}
		buf := make([]byte, 64)
		n, err := r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "hello, world", string(buf[:n]), "WriteString's bytes through the pipe")
		return append(ls, observeFileOps(t, r))
	}, func(t *testing.T, ls []fileOpLog) {
		w := ls[0]
		require.Equal(t, "WriteString: n=12"+noErr, w[0])
		require.Contains(t, w[1], "Seek(0, current): n=0 seek |1: illegal seek")
		require.Contains(t, w[5], "Truncate(5): n=0 truncate |1: invalid argument")
		require.Contains(t, w[8], "Sync: n=0 sync |1: invalid argument", "fsync on a pipe")
		require.Equal(t, "after Chmod: mode pgrw-r----- size 0", w[10])
		require.Equal(t, "Chown(uid, gid): n=0"+noErr, w[12])
	})
}

// fileOpsOnPath runs observeFileOps on path opened by os and by gatenet in
// turn (create makes it afresh each time: one path, so the errors compare
// equal), checks each log, and requires the two to be equal.
func fileOpsOnPath(t *testing.T, path string, flag int, create func(t *testing.T), check func(t *testing.T, l fileOpLog)) {
	openersSideBySide(t, func(t *testing.T, op fileOpener) fileOpLog {
		os.Remove(path)
		create(t)
		f, err := op.open(path, flag, 0o600)
		require.NoError(t, err)
		closeFilesAtEnd(t, f)
		l := observeFileOps(t, f)
		check(t, l)
		return l
	})
}

func TestFileOpsRegular(t *testing.T) {
	testutil.CheckLeaks(t)
	path := filepath.Join(t.TempDir(), "f")
	fileOpsOnPath(t, path, os.O_RDWR|os.O_CREATE, func(*testing.T) {}, func(t *testing.T, l fileOpLog) {
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, "hello", string(got), "WriteString, then Truncate(5)")
		require.Equal(t, "Seek(0, current): n=12"+noErr, l[1])
		require.Equal(t, "Seek(7, start): n=7"+noErr, l[2])
		require.Contains(t, l[3], "seek "+path+": invalid argument")
		require.Equal(t, "after Truncate: mode -rw------- size 5", l[6])
		require.Equal(t, "Seek(0, end): n=5"+noErr, l[7])
		require.Equal(t, "Sync: n=0"+noErr, l[8])
		require.Equal(t, "after Chmod: mode grw-r----- size 5", l[10], "fchmod with the setgid bit mapped")
	})
}

func TestFileOpsFIFO(t *testing.T) {
	testutil.CheckLeaks(t)
	path := filepath.Join(t.TempDir(), "fifo")
	// O_RDWR opens a FIFO without waiting for a peer (Linux).
	fileOpsOnPath(t, path, os.O_RDWR, func(t *testing.T) {
		require.NoError(t, unix.Mkfifo(path, 0o600))
	}, func(t *testing.T, l fileOpLog) {
		require.Contains(t, l[1], "seek "+path+": illegal seek")
	})
}
