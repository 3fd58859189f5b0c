//go:build linux

package gatenet_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"math/rand"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestSendfile: io.Copy from a regular file to a gatenet TCP conn takes
// the sendfile(2) path (counted, not timed) and arrives byte-exact; a
// LimitedReader's N is updated; a pipe source falls back to a buffer.
func TestSendfile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	size := int64(64 << 20)
	if testing.Short() {
		size = 8 << 20
	}
	path := t.TempDir() + "/payload"
	payload := make([]byte, size)
	rand.New(rand.NewSource(1)).Read(payload)
	require.NoError(t, os.WriteFile(path, payload, 0o600))
	want := sha256.Sum256(payload)

	// receive hashes everything the server side reads until EOF.
	receive := func(s io.Reader) <-chan [32]byte {
		ch := make(chan [32]byte, 1)
		go func() {
			h := sha256.New()
			io.Copy(h, s)
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			ch <- sum
		}()
		return ch
	}

	t.Run("os.File", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		got := receive(s)
		before := gatenet.SendfileCalls()
		n, err := io.Copy(c, f)
		require.NoError(t, err)
		require.Equal(t, size, n)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, want, <-got)
		require.Greater(t, gatenet.SendfileCalls(), before, "the sendfile path did not run")
	})
	t.Run("LimitedReader", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		_, err = f.Seek(1000, io.SeekStart)
		require.NoError(t, err)
		got := receive(s)
		lr := &io.LimitedReader{R: f, N: 1 << 20}
		before := gatenet.SendfileCalls()
		n, err := c.ReadFrom(lr)
		require.NoError(t, err)
		require.EqualValues(t, 1<<20, n)
		require.EqualValues(t, 0, lr.N)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, sha256.Sum256(payload[1000:1000+1<<20]), <-got)
		require.Greater(t, gatenet.SendfileCalls(), before)
		pos, _ := f.Seek(0, io.SeekCurrent)
		require.EqualValues(t, 1000+1<<20, pos, "the file offset advances as with read(2)")
	})
	t.Run("gatenet.File", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		got := receive(s)
		before := gatenet.SendfileCalls()
		n, err := c.ReadFrom(f)
		require.NoError(t, err)
		require.Equal(t, size, n)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, want, <-got)
		require.Greater(t, gatenet.SendfileCalls(), before)
	})
	t.Run("PipeFallsBack", func(t *testing.T) {
		c, s := gatenetTCPPair(t)
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		go func() { w.Write(payload[:1<<20]); w.Close() }()
		got := receive(s)
		n, err := c.ReadFrom(r)
		require.NoError(t, err)
		require.EqualValues(t, 1<<20, n)
		require.NoError(t, c.CloseWrite())
		require.Equal(t, sha256.Sum256(payload[:1<<20]), <-got)
	})
}

// TestSendfileParityDeadline: a write deadline fires while a copy
// from a file to a conn is blocked in sendfile(2) on a stalled peer.
// io.Copy(conn, *os.File) goes through (*os.File).WriteTo, and net reports
// the failure as os does, *fs.PathError{Op: "read"}; conn.ReadFrom(file)
// and a LimitedReader report ReadFrom's *net.OpError{Op: "readfrom"}.
func TestSendfileParityDeadline(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 21)
	for _, how := range []string{"io.Copy", "ReadFrom", "LimitedReader"} {
		t.Run(how, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) zcObs {
				c, srv, _ := sockPair(t, s, "tcp4")
				names := udpNames(c, "<C>", srv, "<S>")
				names.add(&net.UnixAddr{Name: path}, "<file>")
				zcSmallBuffers(t, c, srv)
				f, err := os.Open(path)
				require.NoError(t, err)
				defer f.Close()
				before := gatenet.SendfileCalls()
				offered := int64(zcFileSize)
				lr := &io.LimitedReader{R: f, N: zcFileSize - 1000}
				if how == "LimitedReader" {
					offered = lr.N
				}
				n, err := zcExpireWhenStalled(t, c, func() (int64, error) {
					switch how {
					case "io.Copy":
						return io.Copy(c, f)
					case "ReadFrom":
						return c.(io.ReaderFrom).ReadFrom(f)
					}
					return io.Copy(c, lr)
				})
				var o zcObs
				o.Err = sockObserve(err, names)
				o.Partial = n > 0 && n < offered
				o.LimitN = how != "LimitedReader" || lr.N == offered-n
				pos, _ := f.Seek(0, io.SeekCurrent)
				o.Offset = pos == n
				o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
				zcFinish(t, &o, c, srv, n, 21, false)
				return o
			}, func(t *testing.T, s sockStack, o zcObs) {
				if how == "io.Copy" {
					require.Equal(t, "*fs.PathError", o.Err.Type)
					require.Equal(t, "read <file>: i/o timeout", o.Err.Text)
				} else {
					require.Equal(t, "*net.OpError", o.Err.Type)
					require.Equal(t, "readfrom", o.Err.Op)
					require.True(t, o.Err.Timeout)
				}
				require.True(t, o.Err.Deadline, "%+v", o.Err)
				require.True(t, o.Partial && o.Received && o.PrefixOK && o.LimitN && o.Offset && o.ZeroCopyRan, "%+v", o)
			})
		})
	}
}

// TestSendfileGatenetFile: io.Copy(conn, *gatenet.File) of a
// regular file takes sendfile(2) too (through the File's WriteTo, as with
// an *os.File), and a deadline mid-copy reports as *os.File's would.
func TestSendfileGatenetFile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 28)
	t.Run("Whole", func(t *testing.T) {
		c, srv := testutil.TCPPair(t)
		f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		before := gatenet.SendfileCalls()
		got := receiveHashed(srv)
		n, err := io.Copy(c, f)
		require.NoError(t, err)
		require.EqualValues(t, zcFileSize, n)
		require.Greater(t, gatenet.SendfileCalls(), before, "the sendfile path did not run")
		require.NoError(t, c.CloseWrite())
		r := <-got
		require.NoError(t, r.err)
		require.Equal(t, n, r.n)
		require.Equal(t, streamPrefixHash(28, n), r.sum)
	})
	t.Run("Deadline", func(t *testing.T) {
		c, srv := testutil.TCPPair(t)
		zcSmallBuffers(t, c, srv)
		f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		n, err := zcExpireWhenStalled(t, c, func() (int64, error) { return io.Copy(c, f) })
		var pe *fs.PathError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, "read", pe.Op)
		require.Equal(t, path, pe.Path)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.True(t, n > 0 && n < zcFileSize, "n=%d", n)
		var pos int64
		rc, err := f.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) { pos, _ = unix.Seek(int(fd), 0, io.SeekCurrent) }))
		require.Equal(t, n, pos, "the file offset advanced by what was sent")
		var o zcObs
		zcFinish(t, &o, c, srv, n, 28, false)
		require.True(t, o.Received && o.PrefixOK, "%+v", o)
	})
}

// TestSendfileParityLimitedReader: io.Copy(conn, LimitedReader) from a
// file (sendfile) takes exactly N bytes, sets N to 0 and moves the file's
// offset by what it sent.
func TestSendfileParityLimitedReader(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 22)
	const limit = zcLimit
	sockParity(t, func(t *testing.T, s sockStack) zcObs {
		c, srv, _ := sockPair(t, s, "tcp4")
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		before := gatenet.SendfileCalls()
		got := receiveHashed(srv)
		lr := &io.LimitedReader{R: f, N: limit}
		n, err := io.Copy(c, lr)
		o := zcObs{Err: sockObserve(err, nil), LimitN: lr.N == 0 && n == limit}
		pos, _ := f.Seek(0, io.SeekCurrent)
		o.Offset = pos == n
		o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
		zcFinishWith(t, &o, c, got, srv, n, 22, false)
		return o
	}, func(t *testing.T, s sockStack, o zcObs) {
		require.True(t, o.Err.Nil, "%+v", o.Err)
		require.True(t, o.Received && o.PrefixOK && o.LimitN && o.Offset && o.ZeroCopyRan, "%+v", o)
	})
}

// TestSendfileParityCloseDst: the same for a file→conn copy (sendfile).
func TestSendfileParityCloseDst(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 27)
	sockParity(t, func(t *testing.T, s sockStack) zcObs {
		c, srv, _ := sockPair(t, s, "tcp4")
		names := udpNames(c, "<C>", srv, "<S>")
		zcSmallBuffers(t, c, srv)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		before := gatenet.SendfileCalls()
		type res struct {
			n   int64
			err error
		}
		done := make(chan res, 1)
		go func() {
			n, err := io.Copy(c, f)
			done <- res{n, err}
		}()
		zcWaitStalled(t, c)
		c.Close()
		r := <-done
		o := zcObs{Err: sockObserve(r.err, names), Partial: r.n > 0 && r.n < zcFileSize}
		names.add(&net.UnixAddr{Name: path}, "<file>")
		o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
		pos, _ := f.Seek(0, io.SeekCurrent)
		o.Offset = pos == r.n
		zcFinish(t, &o, c, srv, r.n, 27, true)
		return o
	}, func(t *testing.T, s sockStack, o zcObs) {
		require.Equal(t, "*fs.PathError", o.Err.Type) // io.Copy via (*os.File).WriteTo, as above
		require.True(t, o.Err.Closed, "%+v", o.Err)
		require.True(t, o.Partial && o.Received && o.PrefixOK && o.Offset && o.ZeroCopyRan, "%+v", o)
	})
}

// TestSendfileLarge: io.Copy(gatenet TCP conn, *os.File) of a
// large regular file runs on sendfile(2) and arrives byte-exact.
func TestSendfileLarge(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	size := zeroCopyLargeSize()
	path := t.TempDir() + "/payload"
	f, err := os.Create(path)
	require.NoError(t, err)
	want, err := writeStream(f, 11, size)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	c, s := testutil.TCPPair(t)
	f, err = os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got := receiveHashed(s)
	before := gatenet.SendfileCalls()
	n, err := io.Copy(c, f) // (*os.File).WriteTo → (*TCPConn).ReadFrom → sendfile
	require.NoError(t, err)
	require.Equal(t, size, n)
	calls := gatenet.SendfileCalls() - before
	require.NoError(t, c.CloseWrite())
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, size, r.n)
	require.Equal(t, want, r.sum, "SHA-256 of what arrived")
	require.Greater(t, calls, int64(0), "the sendfile path did not run")
	t.Logf("%d MiB in %d sendfile calls", size>>20, calls)
}

const fileToConnSize = 64 << 20

// BenchmarkFileToConn: one iteration rewinds a 64 MiB regular file and
// io.Copies it to a TCP conn; a reader goroutine on the accepted end
// discards.
func BenchmarkFileToConn(b *testing.B) {
	path := filepath.Join(b.TempDir(), "payload")
	data := make([]byte, fileToConnSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatalf("writing the payload: %v", err)
	}
	data = nil
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchFileToConn(b, s, path) })
	}
}

func benchFileToConn(b *testing.B, s tcpStack, path string) {
	testutil.CheckLeaks(b)
	f, err := os.Open(path)
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	defer f.Close()
	c, a := tcpPair(b, s)
	readDone := discardReader(a, 256<<10)

	b.SetBytes(fileToConnSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatalf("seek: %v", err)
		}
		n, err := io.Copy(c, f)
		if err != nil {
			b.Fatalf("copy: %v", err)
		}
		if n != fileToConnSize {
			b.Fatalf("copied %d bytes, want %d", n, fileToConnSize)
		}
	}
	closeAndCheckDrained(b, c, readDone, int64(b.N)*fileToConnSize)
}

// TestSendfileParityCharDevice: a character device that can be a sendfile
// source (/dev/zero) goes through sendfile(2) too, as net's: a write
// deadline mid-copy takes from the LimitedReader exactly what was sent.
// (Through a buffer, the bytes read but not sent would be lost.)
func TestSendfileParityCharDevice(t *testing.T) {
	testutil.Watchdog(t, 3*time.Minute)
	sockParity(t, func(t *testing.T, s sockStack) zcObs {
		c, srv, _ := sockPair(t, s, "tcp4")
		names := udpNames(c, "<C>", srv, "<S>")
		zcSmallBuffers(t, c, srv)
		f, err := os.Open("/dev/zero")
		require.NoError(t, err)
		defer f.Close()
		before := gatenet.SendfileCalls()
		const offered = 64 << 20
		lr := &io.LimitedReader{R: f, N: offered}
		n, err := zcExpireWhenStalled(t, c, func() (int64, error) { return io.Copy(c, lr) })
		var o zcObs
		o.Err = sockObserve(err, names)
		o.Partial = n > 0 && n < offered
		o.LimitN = lr.N == offered-n
		o.ZeroCopyRan = s.isNet() || gatenet.SendfileCalls() > before
		require.NoError(t, c.(sockConn).CloseWrite())
		got, err := io.Copy(io.Discard, srv)
		require.NoError(t, err)
		o.Received = got == n
		return o
	}, func(t *testing.T, s sockStack, o zcObs) {
		require.Equal(t, "*net.OpError", o.Err.Type)
		require.Equal(t, "readfrom", o.Err.Op)
		require.True(t, o.Err.Deadline, "%+v", o.Err)
		require.True(t, o.Partial && o.Received && o.LimitN && o.ZeroCopyRan, "%+v", o)
	})
}

// TestSendfileNetConnFromGatenetFile: io.Copy(*net.TCPConn, *gatenet.File)
// reaches net's sendfile(2) as an *os.File does (the File's WriteTo hands
// net a wrapper with SyscallConn): a write deadline mid-copy leaves the
// file offset at what was sent, where a copy through a buffer would have
// read past it.
func TestSendfileNetConnFromGatenetFile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	path := zcStreamFile(t, 29)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	nc, err := net.Dial("tcp4", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	srv, err := ln.Accept()
	require.NoError(t, err)
	defer srv.Close()
	c := nc.(*net.TCPConn)
	zcSmallBuffers(t, c, srv)
	f, err := gatenet.OpenFile(path, os.O_RDONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	n, err := zcExpireWhenStalled(t, c, func() (int64, error) { return io.Copy(c, f) })
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.True(t, n > 0 && n < zcFileSize, "n=%d", n)
	pos, err := f.Seek(0, io.SeekCurrent)
	require.NoError(t, err)
	require.Equal(t, n, pos, "the file offset advanced by what was sent")
	var o zcObs
	zcFinish(t, &o, c, srv, n, 29, false)
	require.True(t, o.Received && o.PrefixOK, "%+v", o)
}

// TestFileCopyParitySockets: a regular file copied to or from a stream
// socket, gatenet's File and conns against os's and net's. To a Unix
// socket os sends the file with sendfile(2), as to TCP, and a failure is
// the file's "read" *fs.PathError; from a TCP or Unix socket it splices
// into the file, and a failure, the socket's included, is the file's
// "write" *fs.PathError (for TCP inside the conn's "writeto" error, since
// io.Copy hands the copy to the conn's WriteTo, which splices into an
// *os.File too).
func TestFileCopyParitySockets(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	type stack struct {
		name string
		pair func(t testing.TB, network, address string) (net.Conn, net.Conn)
		open func(name string, flag int) (io.ReadWriteCloser, error)
	}
	stacks := []stack{
		{"os+net", testutil.NetPair, func(name string, flag int) (io.ReadWriteCloser, error) { return os.OpenFile(name, flag, 0o600) }},
		{"gatenet", testutil.Pair, func(name string, flag int) (io.ReadWriteCloser, error) { return gatenet.OpenFile(name, flag, 0o600) }},
	}
	address := func(network string) string {
		if network == "unix" {
			return filepath.Join(t.TempDir(), "s")
		}
		return "127.0.0.1:0"
	}
	t.Run("ToUnixSocket", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "src")
		require.NoError(t, os.WriteFile(src, make([]byte, 8<<20), 0o600))
		for _, s := range stacks {
			c, srv := s.pair(t, "unix", address("unix"))
			go func() { io.ReadFull(srv, make([]byte, 100000)); srv.Close() }()
			f, err := s.open(src, os.O_RDONLY)
			require.NoError(t, err)
			before := gatenet.SendfileCalls()
			_, err = io.Copy(c, f)
			var pe *fs.PathError
			require.ErrorAs(t, err, &pe, "%s: %v", s.name, err)
			require.Equal(t, "read", pe.Op, s.name)
			require.Equal(t, src, pe.Path, s.name)
			require.ErrorIs(t, err, unix.EPIPE, s.name)
			require.Equal(t, "sendfile", pe.Err.(*os.SyscallError).Syscall, s.name)
			if s.name == "gatenet" {
				require.Greater(t, gatenet.SendfileCalls(), before, "the sendfile path did not run")
			}
			f.Close()
			c.Close()
		}
	})
	for _, network := range []string{"unix", "tcp"} {
		t.Run("From/"+network, func(t *testing.T) {
			from := stacks
			if network == "tcp" {
				// A gatenet TCP conn into an *os.File: its WriteTo splices,
				// as net's conn and os's ReadFrom do together. (A Unix conn,
				// which has no WriteTo, is copied by os through a buffer.)
				from = append(from, stack{"os file+gatenet conn", testutil.Pair, stacks[0].open})
			}
			for _, s := range from {
				c, srv := s.pair(t, network, address(network))
				payload := bytes.Repeat([]byte("from a socket.."), 50000/15)
				go func() { srv.Write(payload); time.Sleep(time.Second); srv.Close() }()
				require.NoError(t, c.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
				dst := filepath.Join(t.TempDir(), "dst")
				f, err := s.open(dst, os.O_RDWR|os.O_CREATE)
				require.NoError(t, err)
				before := gatenet.SpliceCalls()
				n, err := io.Copy(f, c)
				if s.name != "os+net" {
					require.Greater(t, gatenet.SpliceCalls(), before, "%s: the splice path did not run", s.name)
				}
				require.ErrorIs(t, err, os.ErrDeadlineExceeded, s.name)
				if network == "tcp" {
					var oe *net.OpError
					require.ErrorAs(t, err, &oe, s.name)
					require.Equal(t, "writeto", oe.Op, s.name)
					err = oe.Err
				}
				pe, ok := err.(*fs.PathError)
				require.True(t, ok, "%s: %#v (%v)", s.name, err, err)
				require.Equal(t, "write", pe.Op, s.name)
				require.Equal(t, dst, pe.Path, s.name)
				require.EqualValues(t, len(payload), n, s.name)
				got, err := os.ReadFile(dst)
				require.NoError(t, err)
				require.Equal(t, payload, got, s.name)
				f.Close()
				c.Close()
			}
		})
	}
}

// TestFileSendToNetConnsAsOS: a *gatenet.File copied into one of net's
// own stream conns is sent with sendfile(2), as os's File.WriteTo sends
// an *os.File, so bytes arrive whole and a failure is the file's "read"
// *fs.PathError around sendfile's error, or around the conn's deadline,
// as os's. Before, net's ReadFrom sent it to TCP ("readfrom" OpError) and
// a Unix conn got it through a buffer (the conn's "write" error).
func TestFileSendToNetConnsAsOS(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	path := zcStreamFile(t, 31)
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	opens := map[string]func() (io.ReadCloser, error){
		"os":      func() (io.ReadCloser, error) { return os.Open(path) },
		"gatenet": func() (io.ReadCloser, error) { return gatenet.OpenFile(path, os.O_RDONLY, 0) },
	}
	for _, network := range []string{"tcp", "unix"} {
		address := "127.0.0.1:0"
		if network == "unix" {
			address = filepath.Join(t.TempDir(), "s")
		}
		failures := map[string]func(t *testing.T, c, srv net.Conn){
			"PeerGone": func(t *testing.T, c, srv net.Conn) { require.NoError(t, srv.Close()) },
			"WriteDeadline": func(t *testing.T, c, srv net.Conn) {
				zcSmallBuffers(t, c, srv)
				require.NoError(t, c.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
			},
		}
		t.Run(network+"/Bytes", func(t *testing.T) {
			for name, open := range opens {
				c, srv := testutil.NetPair(t, network, address)
				f, err := open()
				require.NoError(t, err)
				got := make(chan []byte, 1)
				go func() { b, _ := io.ReadAll(srv); got <- b }()
				n, err := io.Copy(c, f)
				require.NoError(t, err, name)
				require.EqualValues(t, len(want), n, name)
				c.Close()
				require.True(t, bytes.Equal(want, <-got), name)
				f.Close()
				if network == "unix" {
					address = filepath.Join(t.TempDir(), "s")
				}
			}
		})
		for fname, fail := range failures {
			t.Run(network+"/"+fname, func(t *testing.T) {
				shapes := map[string]string{}
				for name, open := range opens {
					if network == "unix" {
						address = filepath.Join(t.TempDir(), "s")
					}
					c, srv := testutil.NetPair(t, network, address)
					fail(t, c, srv)
					f, err := open()
					require.NoError(t, err)
					_, err = io.Copy(c, f)
					require.Error(t, err, name)
					shape := errShape(err)
					if i := strings.LastIndex(shape, "syscall.Errno"); i >= 0 {
						shape = shape[:i] + "syscall.Errno" // EPIPE or ECONNRESET, as the peer's RST races
					}
					shapes[name] = shape
					f.Close()
					c.Close()
					srv.Close()
				}
				require.Equal(t, shapes["os"], shapes["gatenet"])
				require.Contains(t, shapes["os"], "PathError{read "+path+"}")
			})
		}
	}
}
