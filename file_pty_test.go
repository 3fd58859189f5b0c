//go:build linux

package gatenet_test

// Files on descriptors other than pipes that epoll accepts: a
// pseudo-terminal master and replica, and a FIFO, each opened by
// gatenet.OpenFile and, side by side, by os.OpenFile.

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// ptyMakeRaw is cfmakeraw(3): no echo, no line editing, no output processing.
func ptyMakeRaw(t testing.TB, f fileLike) {
	t.Helper()
	fd := fileSysfd(t, f)
	tio, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	require.NoError(t, err)
	tio.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	tio.Oflag &^= unix.OPOST
	tio.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	tio.Cflag &^= unix.CSIZE | unix.PARENB
	tio.Cflag |= unix.CS8
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
	require.NoError(t, unix.IoctlSetTermios(fd, unix.TCSETS, tio))
}

// ttyReadFull reads exactly n bytes, as the tty delivers them in pieces.
func ttyReadFull(t testing.TB, f fileLike, n int) string {
	t.Helper()
	require.NoError(t, f.SetReadDeadline(time.Now().Add(time.Minute))) // hang detector
	buf := make([]byte, 0, n)
	for len(buf) < n {
		m, err := f.Read(buf[len(buf):n])
		require.NoError(t, err)
		buf = buf[:len(buf)+m]
	}
	require.NoError(t, f.SetReadDeadline(time.Time{}))
	return string(buf)
}

type ttyObs struct {
	MasterNonblock, ReplicaNonblock bool
	MasterMode                      os.FileMode
	Timeout                         fileErrObs
	ToMaster, ToReplica             string
	CloseUnblock                    fileIOObs
}

func TestFilePty(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	openersSideBySide(t, func(t *testing.T, op fileOpener) ttyObs {
		master, err := op.open("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			t.Skipf("opening /dev/ptmx: %v", err)
		}
		closeFilesAtEnd(t, master)
		mfd := fileSysfd(t, master)
		require.NoError(t, unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0), "unlockpt")
		n, err := unix.IoctlGetInt(mfd, unix.TIOCGPTN)
		require.NoError(t, err, "ptsname")
		name := "/dev/pts/" + strconv.Itoa(n)
		replica, err := op.open(name, os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			t.Skipf("opening the replica %s: %v", name, err)
		}
		closeFilesAtEnd(t, replica)
		ptyMakeRaw(t, replica)

		var o ttyObs
		o.MasterNonblock, o.ReplicaNonblock = fileNonblocking(t, master), fileNonblocking(t, replica)
		o.MasterMode = fileType(t, master)

		o.Timeout = fileReadTimesOut(t, master, "/dev/ptmx")

		_, err = replica.Write([]byte("hi\n"))
		require.NoError(t, err)
		o.ToMaster = ttyReadFull(t, master, 3)
		_, err = master.Write([]byte("ok\n"))
		require.NoError(t, err)
		o.ToReplica = ttyReadFull(t, replica, 3)

		ch := goRead(master, make([]byte, 16))
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, master.Close())
		res := <-ch
		requirePathError(t, res.Err, "read", "/dev/ptmx", os.ErrClosed)
		o.CloseUnblock = fileIOObs{res.N, observeFileErr(res.Err)}

		require.True(t, o.MasterNonblock && o.ReplicaNonblock, "ttys are polled")
		require.Equal(t, os.ModeDevice|os.ModeCharDevice, o.MasterMode)
		require.Equal(t, "hi\n", o.ToMaster)
		require.Equal(t, "ok\n", o.ToReplica)
		return o
	})
}

// fileReadTimesOut checks that a Read on f with a read deadline 20 ms
// ahead waits that long and fails with os.ErrDeadlineExceeded in a
// *fs.PathError naming path; it clears the deadline and returns the
// error's observation.
func fileReadTimesOut(t *testing.T, f fileLike, path string) fileErrObs {
	t.Helper()
	start := time.Now()
	require.NoError(t, f.SetReadDeadline(start.Add(20*time.Millisecond)))
	_, err := f.Read(make([]byte, 16))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	requirePathError(t, err, "read", path, os.ErrDeadlineExceeded)
	require.NoError(t, f.SetReadDeadline(time.Time{}))
	return observeFileErr(err)
}

type fifoObs struct {
	RNonblock, WNonblock bool
	Mode                 os.FileMode
	Timeout              fileErrObs
	Data                 string
	CloseUnblock         fileIOObs
	EPIPE                fileIOObs
}

func TestFileFIFO(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	path := filepath.Join(t.TempDir(), "fifo") // one path, so errors compare equal
	openersSideBySide(t, func(t *testing.T, op fileOpener) fifoObs {
		require.NoError(t, unix.Mkfifo(path, 0o600))
		t.Cleanup(func() { os.Remove(path) })
		// The reader first, non-blocking, so that opening it does not
		// wait for a writer; the writer's open then finds a reader.
		r, err := op.open(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
		require.NoError(t, err)
		closeFilesAtEnd(t, r)
		w, err := op.open(path, os.O_WRONLY, 0)
		require.NoError(t, err)
		closeFilesAtEnd(t, w)

		var o fifoObs
		o.RNonblock, o.WNonblock = fileNonblocking(t, r), fileNonblocking(t, w)
		o.Mode = fileType(t, r)

		o.Timeout = fileReadTimesOut(t, r, path)
		buf := make([]byte, 16)

		ch := goRead(r, buf)
		time.Sleep(10 * time.Millisecond)
		_, err = w.Write([]byte("through"))
		require.NoError(t, err)
		res := <-ch
		require.NoError(t, res.Err)
		o.Data = string(buf[:res.N])

		ch = goRead(r, buf)
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, r.Close())
		res = <-ch
		requirePathError(t, res.Err, "read", path, os.ErrClosed)
		o.CloseUnblock = fileIOObs{res.N, observeFileErr(res.Err)}

		n, err := w.Write([]byte("x"))
		require.True(t, errors.Is(err, unix.EPIPE), "%v", err)
		o.EPIPE = fileIOObs{n, observeFileErr(err)}

		require.True(t, o.RNonblock && o.WNonblock)
		require.Equal(t, os.ModeNamedPipe, o.Mode)
		require.Equal(t, "through", o.Data)
		return o
	})
}
