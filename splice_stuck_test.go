//go:build linux

package gatenet_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Copies with splice(2) never hold up another caller nor spin: one
// waiting for its source holds no lock of the destination's (an
// *os.File's other writers and its Close go on), one at a TCP urgent
// mark, which splice never passes, parks instead of spinning (so Close
// still ends it), one into a blocking pipe waits for room without its
// source's lock, and one whose source gets faults attached on the way
// moves every byte. Each failure mode hangs: the watchdog reports it.

// readN reads exactly n bytes from r.
func readN(t *testing.T, r io.Reader, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	require.NoError(t, err)
	return b
}

func TestSpliceIdleSourceLeavesFileFree(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	t.Run("Pipe", func(t *testing.T) {
		c, srv := testutil.Pair(t, "tcp", "127.0.0.1:0")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		copied := make(chan error, 1)
		go func() { _, err := io.Copy(w, srv); copied <- err }()
		_, err = c.Write([]byte("a"))
		require.NoError(t, err)
		require.Equal(t, "a", string(readN(t, r, 1))) // the copy runs, its source idle now
		_, err = w.Write([]byte("b"))                 // another writer of the file
		require.NoError(t, err)
		require.Equal(t, "b", string(readN(t, r, 1)))
		require.NoError(t, w.Close()) // os's Close waits for no copy
		_, err = c.Write([]byte("c")) // for a file closed now
		require.NoError(t, err)
		require.ErrorIs(t, <-copied, os.ErrClosed)
		require.NoError(t, c.Close())
	})
	t.Run("Regular", func(t *testing.T) {
		c, srv := testutil.Pair(t, "tcp", "127.0.0.1:0")
		name := filepath.Join(t.TempDir(), "f")
		w, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE, 0o600)
		require.NoError(t, err)
		defer w.Close()
		copied := make(chan error, 1)
		go func() { _, err := io.Copy(w, srv); copied <- err }()
		_, err = c.Write([]byte("a"))
		require.NoError(t, err)
		for st, _ := w.Stat(); st.Size() == 0; st, _ = w.Stat() {
			time.Sleep(time.Millisecond)
		}
		_, err = w.Write([]byte("b")) // another writer of the file
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.NoError(t, <-copied)
		got, err := os.ReadFile(name)
		require.NoError(t, err)
		require.Equal(t, "ab", string(got))
	})
}

// sendUrgent sends "abc", then one urgent byte (MSG_OOB), then "def".
func sendUrgent(t *testing.T, c net.Conn) {
	_, err := c.Write([]byte("abc"))
	require.NoError(t, err)
	rc, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, rc.Write(func(fd uintptr) bool {
		serr = unix.Sendto(int(fd), []byte("!"), unix.MSG_OOB, nil)
		return true
	}))
	require.NoError(t, serr)
	_, err = c.Write([]byte("def"))
	require.NoError(t, err)
}

func TestSpliceAtUrgentMark(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	type copyCase struct {
		pair func(t testing.TB, network, address string) (net.Conn, net.Conn)
		pipe func(t *testing.T) (io.ReadCloser, io.WriteCloser)
	}
	osPipe := func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		return r, w
	}
	gatenetPipe := func(t *testing.T) (io.ReadCloser, io.WriteCloser) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		return r, w
	}
	cases := map[string]copyCase{
		"GatenetConnToOSPipe":  {testutil.Pair, osPipe},
		"GatenetConnToPipe":    {testutil.Pair, gatenetPipe},
		"NetConnToGatenetPipe": {testutil.NetPair, gatenetPipe},
	}
	for name, cc := range cases {
		t.Run(name, func(t *testing.T) {
			c, srv := cc.pair(t, "tcp", "127.0.0.1:0")
			r, w := cc.pipe(t)
			defer r.Close()
			defer w.Close()
			copied := make(chan error, 1)
			go func() { _, err := io.Copy(w, srv); copied <- err }()
			sendUrgent(t, c)
			require.Equal(t, "abc", string(readN(t, r, 3))) // then splice stops at the mark
			require.NoError(t, srv.Close())                 // returns: the copy parks, not spins
			require.Error(t, <-copied)
			c.Close()
		})
	}
}

func TestSpliceToBlockingPipeSourceCloses(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer w.Close()
	c, srv := testutil.Pair(t, "tcp", "127.0.0.1:0")
	defer c.Close()
	go c.Write(make([]byte, 1<<20))
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(w, srv); copied <- err }()
	for { // until the pipe is full: the copy waits for room
		queued, err := unix.IoctlGetInt(p[0], unix.TIOCINQ)
		require.NoError(t, err)
		if queued >= 64<<10 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	// Time for the copy to start waiting for room (it passes either way;
	// it hung here, in Close, when that wait held srv's read lock).
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, srv.Close()) // returns: the wait for room holds no lock of srv's
	require.NoError(t, r.Close())   // ends that wait
	require.Error(t, <-copied)
}

func TestSpliceGoesOnWhenFaultsAttached(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	c, srv := testutil.Pair(t, "tcp", "127.0.0.1:0")
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(w, srv); w.Close(); copied <- err }()
	_, err = c.Write([]byte("part1"))
	require.NoError(t, err)
	require.Equal(t, "part1", string(readN(t, r, 5)))
	require.NoError(t, gatenet.InjectFaults(srv.(gatenet.Pollable), faults.New(1)))
	for _, part := range []string{"part2", "part3"} {
		_, err = c.Write([]byte(part))
		require.NoError(t, err)
		require.Equal(t, part, string(readN(t, r, 5)))
	}
	require.NoError(t, c.Close())
	rest, err := io.ReadAll(r)
	require.NoError(t, err)
	require.NoError(t, <-copied)
	require.Empty(t, rest)
}

// TestSpliceFromNetConnFullPipeSourceCloses: a copy from net's conn into
// a gatenet pipe nobody reads waits for room outside the conn's RawConn,
// so the conn's Close returns (net's Close waits for the conn's users).
func TestSpliceFromNetConnFullPipeSourceCloses(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer w.Close()
	c, srv := testutil.NetPair(t, "tcp", "127.0.0.1:0")
	defer c.Close()
	go c.Write(make([]byte, 4<<20))
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(w, srv); copied <- err }()
	// Time for the copy to fill the pipe and wait for room (it passes
	// either way; it hung here, in Close, when that wait was made inside
	// srv's RawConn.Read).
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, srv.Close())
	require.NoError(t, r.Close()) // ends the wait for room
	require.Error(t, <-copied)
}

// TestSpliceHoldsNoLockWhileWaitingForAnother: a copy whose one end's
// lock is held by another caller waits for it holding nothing of the
// other end's, so the other end's Close returns (net's and os's Close
// wait for their users). Each pair hung in that Close before.
func TestSpliceHoldsNoLockWhileWaitingForAnother(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	settle := func() { time.Sleep(100 * time.Millisecond) } // for the goroutines to park (passes either way)
	t.Run("NetConnToGatenetPipeWhosWriterWaits", func(t *testing.T) {
		c, srv := testutil.NetPair(t, "tcp", "127.0.0.1:0")
		defer c.Close()
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		_, err = c.Write([]byte("hello"))
		require.NoError(t, err)
		go w.Write(make([]byte, 4<<20)) // fills the pipe, parks holding its write lock
		settle()
		copied := make(chan error, 1)
		go func() { _, err := io.Copy(w, srv); copied <- err }()
		settle()
		require.NoError(t, srv.Close()) // returns
		require.NoError(t, r.Close())
		require.NoError(t, w.Close())
		<-copied
	})
	for name, pipe := range map[string]func() (io.Closer, io.Closer, io.Writer){
		"GatenetConnWhoseReaderWaitsToOSPipe": func() (io.Closer, io.Closer, io.Writer) {
			r, w, err := os.Pipe()
			require.NoError(t, err)
			return r, w, w
		},
		"GatenetConnWhoseReaderWaitsToGatenetPipe": func() (io.Closer, io.Closer, io.Writer) {
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			return r, w, w
		},
	} {
		t.Run(name, func(t *testing.T) {
			c, srv := testutil.Pair(t, "tcp", "127.0.0.1:0")
			r, w, dst := pipe()
			defer r.Close()
			go srv.Read(make([]byte, 10)) // parks holding srv's read lock
			settle()
			copied := make(chan error, 1)
			go func() { _, err := io.Copy(dst, srv); copied <- err }()
			settle()
			require.NoError(t, w.Close()) // returns
			require.NoError(t, c.Close())
			<-copied
			srv.Close()
		})
	}
}

// TestFileSendToRefusingNetConnAsOS: a *gatenet.File sent to one of net's
// conns that is closed, or past its write deadline, before anything is
// sent: as os's, sendfile is not handled, net's ReadFrom takes the copy
// over, and the error, the count and the file's offset are os's.
func TestFileSendToRefusingNetConnAsOS(t *testing.T) {
	testutil.CheckLeaks(t)
	path := zcStreamFile(t, 37)
	type result struct {
		N, Offset int64
		Err       string
	}
	for name, refuse := range map[string]func(c net.Conn){
		"Closed":       func(c net.Conn) { c.Close() },
		"PastDeadline": func(c net.Conn) { c.SetWriteDeadline(time.Now().Add(-time.Second)) },
	} {
		t.Run(name, func(t *testing.T) {
			results := map[string]result{}
			for stack, open := range map[string]func() (fileLike, error){
				"os":      func() (fileLike, error) { return os.Open(path) },
				"gatenet": func() (fileLike, error) { return gatenet.OpenFile(path, os.O_RDONLY, 0) },
			} {
				f, err := open()
				require.NoError(t, err)
				c, _ := testutil.NetPair(t, "tcp", "127.0.0.1:0")
				refuse(c)
				n, err := f.(io.WriterTo).WriteTo(c)
				off, serr := f.Seek(0, io.SeekCurrent)
				require.NoError(t, serr)
				results[stack] = result{n, off, errShape(err)}
				f.Close()
				c.Close()
			}
			require.Equal(t, results["os"], results["gatenet"])
		})
	}
}
