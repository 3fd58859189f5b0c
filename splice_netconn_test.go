//go:build linux

package gatenet_test

import (
	"bytes"
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

// A copy from one of net's own stream conns into a *gatenet.File splices,
// as os's File.ReadFrom does (os reaches net's descriptors): into a pipe
// or a regular file, bytes whole, a LimitedReader's N kept, and a failure
// the file's "write" *fs.PathError around splice's error, or around the
// conn's deadline, field by field as os's.

// fileDst is a copy's destination, os's or gatenet's, and how to read
// back what reached it.
type fileDst struct {
	w          io.WriteCloser
	readBack   func() []byte // after w is closed
	closeAll   func()
	readerGone func() // a pipe's: its reader closes; nil for a file
}

// fileDsts are the destinations; a regular file is dir's "dst".
func fileDsts(dir string) map[string]map[string]func(t *testing.T) fileDst {
	pipe := func(t *testing.T, w io.WriteCloser, r io.ReadCloser) fileDst {
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(r); got <- b }()
		return fileDst{w, func() []byte { return <-got }, func() { w.Close(); r.Close() }, func() { r.Close() }}
	}
	regular := func(t *testing.T, open func(string) (io.WriteCloser, error)) fileDst {
		name := filepath.Join(dir, "dst")
		w, err := open(name)
		require.NoError(t, err)
		return fileDst{w, func() []byte { b, _ := os.ReadFile(name); return b }, func() { w.Close() }, nil}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	return map[string]map[string]func(t *testing.T) fileDst{
		"Pipe": {
			"os": func(t *testing.T) fileDst {
				r, w, err := os.Pipe()
				require.NoError(t, err)
				return pipe(t, w, r)
			},
			"gatenet": func(t *testing.T) fileDst {
				r, w, err := gatenet.Pipe()
				require.NoError(t, err)
				return pipe(t, w, r)
			},
		},
		"Regular": {
			"os": func(t *testing.T) fileDst {
				return regular(t, func(name string) (io.WriteCloser, error) { return os.OpenFile(name, flags, 0o600) })
			},
			"gatenet": func(t *testing.T) fileDst {
				return regular(t, func(name string) (io.WriteCloser, error) { return gatenet.OpenFile(name, flags, 0o600) })
			},
		},
	}
}

func TestFileSpliceFromNetConnsAsOS(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	payload := bytes.Repeat([]byte("from net's conn"), 4<<20/15)
	netPair := func(t *testing.T, network string) (net.Conn, net.Conn) {
		address := "127.0.0.1:0"
		if network == "unix" {
			address = filepath.Join(t.TempDir(), "s")
		}
		return testutil.NetPair(t, network, address)
	}
	for dname, stacks := range fileDsts(t.TempDir()) {
		for _, network := range []string{"tcp", "unix"} {
			t.Run(dname+"/"+network+"/Bytes", func(t *testing.T) {
				for name, open := range stacks {
					c, srv := netPair(t, network)
					d := open(t)
					go func() { c.Write(payload); c.Close() }()
					before := gatenet.SpliceCalls()
					n, err := io.Copy(d.w, srv)
					require.NoError(t, err, name)
					require.EqualValues(t, len(payload), n, name)
					if name == "gatenet" {
						require.Greater(t, gatenet.SpliceCalls(), before, "the splice path did not run")
					}
					require.NoError(t, d.w.Close())
					require.True(t, bytes.Equal(payload, d.readBack()), name)
					d.closeAll()
				}
			})
			t.Run(dname+"/"+network+"/Limited", func(t *testing.T) {
				c, srv := netPair(t, network)
				d := fileDsts(t.TempDir())[dname]["gatenet"](t)
				go c.Write(payload)
				lr := &io.LimitedReader{R: srv, N: 100000}
				n, err := d.w.(io.ReaderFrom).ReadFrom(lr)
				require.NoError(t, err)
				require.EqualValues(t, 100000, n)
				require.Zero(t, lr.N)
				require.NoError(t, d.w.Close())
				require.True(t, bytes.Equal(payload[:100000], d.readBack()))
				d.closeAll()
			})
			failures := map[string]func(t *testing.T, c, srv net.Conn, d fileDst){
				"SourceDeadline": func(t *testing.T, c, srv net.Conn, d fileDst) {
					_, err := c.Write([]byte("partial"))
					require.NoError(t, err)
					require.NoError(t, srv.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
				},
				"SourceClosed": func(t *testing.T, c, srv net.Conn, d fileDst) {
					time.AfterFunc(100*time.Millisecond, func() { srv.Close() })
				},
			}
			if dname == "Pipe" {
				failures["ReaderGone"] = func(t *testing.T, c, srv net.Conn, d fileDst) {
					d.readerGone()
					go c.Write(payload)
				}
			}
			for fname, fail := range failures {
				t.Run(dname+"/"+network+"/"+fname, func(t *testing.T) {
					shapes := map[string]string{}
					for name, open := range stacks {
						c, srv := netPair(t, network)
						d := open(t)
						fail(t, c, srv, d)
						_, err := io.Copy(d.w, srv)
						require.Error(t, err, name)
						shapes[name] = errShape(err)
						c.Close()
						srv.Close()
						d.closeAll()
					}
					require.Equal(t, shapes["os"], shapes["gatenet"])
				})
			}
		}
	}
}
