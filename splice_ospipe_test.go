//go:build linux

package gatenet_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// A TCP conn copied into an *os.File pipe (io.Copy(os.Stdout, conn) with
// stdout a pipe): net's conn splices into it (os's spliceToFile), and a
// gatenet conn's WriteTo does the same, so the copy moves every byte and
// fails as net's does, field by field, whichever end fails.

// errShape is err's chain, one link per wrapper, with the fields that say
// which end and which call failed (addresses left out: they differ).
func errShape(err error) string {
	var links []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch v := e.(type) {
		case *net.OpError:
			links = append(links, fmt.Sprintf("OpError{%s %s}", v.Op, v.Net))
		case *fs.PathError:
			links = append(links, fmt.Sprintf("PathError{%s %s}", v.Op, v.Path))
		case *os.SyscallError:
			links = append(links, fmt.Sprintf("SyscallError{%s}", v.Syscall))
		default:
			links = append(links, fmt.Sprintf("%T(%v)", e, e))
		}
	}
	return strings.Join(links, " > ")
}

func TestTCPWriteToOSPipe(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	const size = 8 << 20
	payload := bytes.Repeat([]byte("to an os pipe.."), size/15)
	type copyEnd struct {
		c, srv net.Conn
		r, w   *os.File
	}
	setup := func(t *testing.T, pair func(testing.TB, string, string) (net.Conn, net.Conn)) copyEnd {
		c, srv := pair(t, "tcp", "127.0.0.1:0")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		t.Cleanup(func() { r.Close(); w.Close() })
		return copyEnd{c, srv, r, w}
	}
	stacks := map[string]func(testing.TB, string, string) (net.Conn, net.Conn){
		"net": testutil.NetPair, "gatenet": testutil.Pair,
	}

	t.Run("Bytes", func(t *testing.T) {
		for name, pair := range stacks {
			e := setup(t, pair)
			go func() { e.srv.Write(payload); e.srv.Close() }()
			got := make(chan []byte, 1)
			go func() { // a slow reader: the copy waits for room
				var b bytes.Buffer
				buf := make([]byte, 4096)
				for {
					n, err := e.r.Read(buf)
					b.Write(buf[:n])
					if err != nil {
						got <- b.Bytes()
						return
					}
				}
			}()
			before := gatenet.SpliceCalls()
			n, err := io.Copy(e.w, e.c)
			require.NoError(t, err, name)
			require.EqualValues(t, len(payload), n, name)
			if name == "gatenet" {
				require.Greater(t, gatenet.SpliceCalls(), before, "the splice path did not run")
			}
			require.NoError(t, e.w.Close())
			require.True(t, bytes.Equal(payload, <-got), name)
		}
	})

	failures := map[string]func(t *testing.T, e copyEnd){
		"ReaderGone": func(t *testing.T, e copyEnd) { // EPIPE: the pipe's error
			require.NoError(t, e.r.Close())
			go e.srv.Write(payload)
		},
		"PipeWriteDeadline": func(t *testing.T, e copyEnd) { // nobody reads the pipe
			require.NoError(t, e.w.SetWriteDeadline(time.Now().Add(100*time.Millisecond)))
			go e.srv.Write(payload)
		},
		"ConnReadDeadline": func(t *testing.T, e copyEnd) { // the conn's error, as the pipe's write
			require.NoError(t, e.c.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
			go io.Copy(io.Discard, e.r)
		},
		"PipeClosed": func(t *testing.T, e copyEnd) { // closed while the copy waits for room
			time.AfterFunc(100*time.Millisecond, func() { e.w.Close() })
			go e.srv.Write(payload)
		},
	}
	for fname, fail := range failures {
		t.Run(fname, func(t *testing.T) {
			shapes := map[string]string{}
			for name, pair := range stacks {
				e := setup(t, pair)
				fail(t, e)
				_, err := io.Copy(e.w, e.c)
				require.Error(t, err, name)
				shapes[name] = errShape(err)
				e.c.Close()
				e.srv.Close()
			}
			require.Equal(t, shapes["net"], shapes["gatenet"])
		})
	}

	t.Run("BlockingPipe", func(t *testing.T) { // os.NewFile of a blocking pipe
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
		r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
		defer r.Close()
		c, srv := testutil.Pair(t, "tcp", "127.0.0.1:0")
		go func() { srv.Write(payload); srv.Close() }()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(r); got <- b }()
		before := gatenet.SpliceCalls()
		n, err := io.Copy(w, c)
		require.NoError(t, err)
		require.EqualValues(t, len(payload), n)
		require.Greater(t, gatenet.SpliceCalls(), before, "the splice path did not run")
		require.NoError(t, w.Close())
		require.True(t, bytes.Equal(payload, <-got))
	})
}

// TestOSFileReadFromGatenetConn: (*os.File).ReadFrom called with a
// gatenet TCP conn (not through io.Copy, whose WriteTo comes first)
// splices too, and fails as with net's conn: the file's own "write"
// *fs.PathError, unwrapped, as os's ReadFrom returns it.
func TestOSFileReadFromGatenetConn(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	shapes := map[string]string{}
	for name, pair := range map[string]func(testing.TB, string, string) (net.Conn, net.Conn){
		"net": testutil.NetPair, "gatenet": testutil.Pair,
	} {
		c, srv := pair(t, "tcp", "127.0.0.1:0")
		r, w, err := os.Pipe()
		require.NoError(t, err)
		go io.Copy(io.Discard, r)
		_, err = c.Write([]byte("hello"))
		require.NoError(t, err)
		require.NoError(t, srv.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
		before := gatenet.SpliceCalls()
		n, err := w.ReadFrom(srv)
		require.EqualValues(t, 5, n, name)
		if name == "gatenet" {
			require.Greater(t, gatenet.SpliceCalls(), before, "the splice path did not run")
		}
		shapes[name] = errShape(err)
		w.Close()
		r.Close()
		c.Close()
		srv.Close()
	}
	require.Equal(t, shapes["net"], shapes["gatenet"])
}
