//go:build linux

package gatenet_test

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// A stream socket copied into a File that is closed already fails as os's
// copy does, which reads the socket first: at its end with nothing, else
// with the File's "write" *fs.PathError, whichever package's File and
// conn they are.
func TestSpliceIntoClosedFile(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	dir := t.TempDir()
	type readerFrom interface {
		io.ReaderFrom
		io.Closer
	}
	files := map[string]func(t *testing.T, name string) readerFrom{
		"os": func(t *testing.T, name string) readerFrom {
			f, err := os.Create(filepath.Join(dir, name))
			require.NoError(t, err)
			return f
		},
		"gatenet": func(t *testing.T, name string) readerFrom {
			f, err := gatenet.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
			require.NoError(t, err)
			return f
		},
	}
	conns := map[string]func(testing.TB, string, string) (net.Conn, net.Conn){
		"net": testutil.NetPair, "gatenet": testutil.Pair,
	}
	// run copies the server end of a pair into a closed file named name:
	// the client sent a few bytes first, or closed (the source at its end).
	run := func(t *testing.T, file, conn string, atEnd bool) (int64, string) {
		c, s := conns[conn](t, "tcp", "127.0.0.1:0")
		if atEnd {
			c.Close()
		} else {
			_, err := c.Write([]byte("hello"))
			require.NoError(t, err)
		}
		f := files[file](t, "f")
		f.Close()
		n, err := f.ReadFrom(s)
		return n, errShapeNamed(err)
	}
	for _, atEnd := range []bool{false, true} {
		wantN, want := run(t, "os", "net", atEnd)
		if atEnd {
			require.Equal(t, "", want, "os at the socket's end")
		} else {
			require.NotEmpty(t, want)
		}
		for _, file := range []string{"os", "gatenet"} {
			for _, conn := range []string{"net", "gatenet"} {
				if file == "os" && conn == "net" {
					continue
				}
				n, got := run(t, file, conn, atEnd)
				require.Equal(t, wantN, n, "%s File, %s conn, at end %v", file, conn, atEnd)
				require.Equal(t, want, got, "%s File, %s conn, at end %v", file, conn, atEnd)
			}
		}
	}
}
