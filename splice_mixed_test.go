//go:build linux

package gatenet_test

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// io.Copy between a gatenet TCP conn and one of net's conns splices, as
// between two of net's, and fails with net's error chain: "writeto" around
// the destination's "readfrom" (none into a Unix conn, which net's
// TCPConn.WriteTo splices into itself) around splice's error.
func TestMixedTCPCopiesAsNet(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	payload := bytes.Repeat([]byte("mixed stacks..."), 4<<20/15)
	type pairFn = func(testing.TB, string, string) (net.Conn, net.Conn)
	stacks := map[string]struct{ src, dst pairFn }{
		"net>net":     {testutil.NetPair, testutil.NetPair},
		"gatenet>net": {testutil.Pair, testutil.NetPair},
		"net>gatenet": {testutil.NetPair, testutil.Pair},
	}
	for _, dstNet := range []string{"tcp", "unix"} {
		address := func() string {
			if dstNet == "unix" {
				return filepath.Join(t.TempDir(), "s")
			}
			return "127.0.0.1:0"
		}
		t.Run(dstNet+"/Bytes", func(t *testing.T) {
			for name, st := range stacks {
				if dstNet == "unix" && name == "net>gatenet" {
					continue // a gatenet UnixConn has no ReadFrom: net copies through a buffer
				}
				in, src := st.src(t, "tcp", "127.0.0.1:0")
				dst, out := st.dst(t, dstNet, address())
				go func() { in.Write(payload); in.Close() }()
				got := make(chan []byte, 1)
				go func() { b, _ := io.ReadAll(out); got <- b }()
				before := gatenet.SpliceCalls()
				n, err := io.Copy(dst, src)
				require.NoError(t, err, name)
				require.EqualValues(t, len(payload), n, name)
				if name != "net>net" {
					require.Greater(t, gatenet.SpliceCalls(), before, "%s: the splice path did not run", name)
				}
				dst.Close()
				require.True(t, bytes.Equal(payload, <-got), name)
				src.Close()
			}
		})
		failures := map[string]func(in, src, dst, out net.Conn){
			"SourceDeadline": func(in, src, dst, out net.Conn) {
				in.Write([]byte("hello"))
				src.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				go io.Copy(io.Discard, out)
			},
			"ReaderGone": func(in, src, dst, out net.Conn) {
				out.Close()
				go in.Write(payload)
			},
			"DestinationDeadline": func(in, src, dst, out net.Conn) {
				dst.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				go in.Write(payload)
			},
		}
		for fname, fail := range failures {
			t.Run(dstNet+"/"+fname, func(t *testing.T) {
				shapes := map[string]string{}
				for name, st := range stacks {
					if dstNet == "unix" && name == "net>gatenet" {
						continue
					}
					in, src := st.src(t, "tcp", "127.0.0.1:0")
					dst, out := st.dst(t, dstNet, address())
					fail(in, src, dst, out)
					_, err := io.Copy(dst, src)
					require.Error(t, err, name)
					shape := errShape(err)
					// EPIPE or ECONNRESET, as the peer's RST races.
					shape = strings.NewReplacer("broken pipe", "EPIPE|ECONNRESET", "connection reset by peer", "EPIPE|ECONNRESET").Replace(shape)
					shapes[name] = shape
					in.Close()
					src.Close()
					dst.Close()
					out.Close()
				}
				for name, shape := range shapes {
					require.Equal(t, shapes["net>net"], shape, name)
				}
			})
		}
	}
}

// countingTCPConn is a user's type around net's conn, with methods of
// its own: copies must go through them, as with net's conns.
type countingTCPConn struct {
	*net.TCPConn
	read, written atomic.Int64
}

func (c *countingTCPConn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingTCPConn) Write(b []byte) (int, error) {
	n, err := c.TCPConn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

func (c *countingTCPConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}

func (c *countingTCPConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c}, r)
}

// TestMixedTCPCopiesRunUsersMethods: a gatenet TCP conn copied with a
// user's type that embeds net's conn does not splice past it: its Read
// (into the gatenet conn's ReadFrom) and Write (through its ReadFrom, from
// the gatenet conn's WriteTo) see every byte, as with net's conn.
func TestMixedTCPCopiesRunUsersMethods(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	payload := bytes.Repeat([]byte("z"), 100000)
	t.Run("ReadFrom", func(t *testing.T) {
		in, src := testutil.NetPair(t, "tcp", "127.0.0.1:0")
		dst, out := testutil.Pair(t, "tcp", "127.0.0.1:0")
		u := &countingTCPConn{TCPConn: src.(*net.TCPConn)}
		go func() { in.Write(payload); in.Close() }()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(out); got <- b }()
		n, err := dst.(io.ReaderFrom).ReadFrom(u)
		require.NoError(t, err)
		require.EqualValues(t, len(payload), n)
		dst.Close()
		require.Len(t, <-got, len(payload))
		require.EqualValues(t, len(payload), u.read.Load())
	})
	t.Run("WriteTo", func(t *testing.T) {
		in, src := testutil.Pair(t, "tcp", "127.0.0.1:0")
		dst, out := testutil.NetPair(t, "tcp", "127.0.0.1:0")
		u := &countingTCPConn{TCPConn: dst.(*net.TCPConn)}
		go func() { in.Write(payload); in.Close() }()
		got := make(chan []byte, 1)
		go func() { b, _ := io.ReadAll(out); got <- b }()
		n, err := io.Copy(u, src)
		require.NoError(t, err)
		require.EqualValues(t, len(payload), n)
		dst.Close()
		require.Len(t, <-got, len(payload))
		require.EqualValues(t, len(payload), u.written.Load())
	})
}
