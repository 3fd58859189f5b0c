//go:build linux

package gatenet_test

import (
	"bytes"
	"errors"
	"fmt"
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

func TestWriteBuffers(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	c, s := gatenetTCPPair(t)
	// 3000 buffers (more than IOV_MAX), some empty, 8 MiB in all.
	var bufs net.Buffers
	var want bytes.Buffer
	for i := 0; i < 3000; i++ {
		b := bytes.Repeat([]byte{byte(i)}, (i*37)%5600)
		bufs = append(bufs, b)
		want.Write(b)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(s)
		got <- b
	}()
	n, err := c.WriteBuffers(&bufs)
	require.NoError(t, err)
	require.EqualValues(t, want.Len(), n)
	require.Empty(t, bufs, "consumed")
	n, err = c.Writev([][]byte{[]byte("tail"), nil, []byte("!")})
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	require.NoError(t, c.CloseWrite())
	want.WriteString("tail!")
	require.Equal(t, want.Bytes(), <-got)

	require.NoError(t, c.Close())
	_, err = c.WriteBuffers(&net.Buffers{[]byte("x")})
	var op *net.OpError
	require.True(t, errors.As(err, &op))
	require.Equal(t, "writev", op.Op)
	require.ErrorIs(t, err, net.ErrClosed)
}

const (
	writevBufs = 64
	writevSize = 64
)

// BenchmarkWritev64: one iteration writes 64 buffers of 64 B with one
// gathered write: net.Buffers.WriteTo on a *net.TCPConn (writev inside
// net), (*gatenet.TCPConn).WriteBuffers on gatenet. A reader goroutine on
// the accepted end discards.
func BenchmarkWritev64(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchWritev(b, s) })
	}
}

// buffersWriter is gatenet's TCPConn.WriteBuffers.
type buffersWriter interface {
	WriteBuffers(v *net.Buffers) (int64, error)
}

func benchWritev(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	c, a := tcpPair(b, s)

	var write func(v *net.Buffers) (int64, error)
	switch cc := c.(type) {
	case *net.TCPConn:
		write = func(v *net.Buffers) (int64, error) { return v.WriteTo(cc) }
	case buffersWriter:
		write = cc.WriteBuffers
	default:
		b.Fatalf("%T has no gathered write", c)
	}

	readDone := discardReader(a, 64<<10)

	bufs := make([][]byte, writevBufs)
	for i := range bufs {
		bufs[i] = make([]byte, writevSize)
		for j := range bufs[i] {
			bufs[i][j] = byte(i + j)
		}
	}
	// Both writers consume the Buffers (and trim its first element on a
	// partial write), so each iteration writes a fresh copy of the slice.
	scratch := make([][]byte, writevBufs)

	b.SetBytes(writevBufs * writevSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		copy(scratch, bufs)
		v := net.Buffers(scratch)
		n, err := write(&v)
		if err != nil {
			b.Fatalf("writev: %v", err)
		}
		if n != writevBufs*writevSize {
			b.Fatalf("wrote %d bytes, want %d", n, writevBufs*writevSize)
		}
	}
	closeAndCheckDrained(b, c, readDone, int64(b.N)*writevBufs*writevSize)
}

// TestWriteBuffersOneMessage: on a message socket WriteBuffers sends the
// buffers as one message, as net.Buffers.WriteTo on net's conn does (on a
// gatenet conn net.Buffers.WriteTo makes a message of each buffer).
func TestWriteBuffersOneMessage(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	type buffersWriter interface {
		WriteBuffers(*net.Buffers) (int64, error)
	}
	messages := func(t *testing.T, r net.Conn) []string {
		var got []string
		buf := make([]byte, 64)
		for {
			require.NoError(t, r.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
			n, err := r.Read(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return got
			}
			require.NoError(t, err)
			got = append(got, string(buf[:n]))
		}
	}
	dir := t.TempDir()
	for _, c := range []struct {
		network string
		pair    func(t *testing.T, gate bool) (w, r net.Conn)
	}{
		{"udp", func(t *testing.T, gate bool) (net.Conn, net.Conn) {
			r, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			require.NoError(t, err)
			dial := net.Dial
			if gate {
				dial = gatenet.Dial
			}
			w, err := dial("udp", r.LocalAddr().String())
			require.NoError(t, err)
			return w, r
		}},
		{"unixgram", func(t *testing.T, gate bool) (net.Conn, net.Conn) {
			path := filepath.Join(dir, fmt.Sprintf("g%v", gate))
			r, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
			require.NoError(t, err)
			dial := net.Dial
			if gate {
				dial = gatenet.Dial
			}
			w, err := dial("unixgram", path)
			require.NoError(t, err)
			return w, r
		}},
		{"unixpacket", func(t *testing.T, gate bool) (net.Conn, net.Conn) {
			path := filepath.Join(dir, fmt.Sprintf("p%v", gate))
			if gate {
				return testutil.Pair(t, "unixpacket", path)
			}
			return testutil.NetPair(t, "unixpacket", path)
		}},
	} {
		t.Run(c.network, func(t *testing.T) {
			var want []string
			for _, gate := range []bool{false, true} {
				w, r := c.pair(t, gate)
				v := net.Buffers{[]byte("head:"), nil, []byte("body:"), []byte("tail")}
				var n int64
				var err error
				if gate {
					n, err = w.(buffersWriter).WriteBuffers(&v)
				} else {
					n, err = v.WriteTo(w)
				}
				require.NoError(t, err)
				require.EqualValues(t, 14, n)
				require.Empty(t, v, "consumed")
				got := messages(t, r)
				require.NoError(t, w.Close())
				require.NoError(t, r.Close())
				if !gate {
					want = got
					require.Equal(t, []string{"head:body:tail"}, want, "net's")
					continue
				}
				require.Equal(t, want, got, "gatenet's WriteBuffers against net's Buffers.WriteTo")
			}
		})
	}
}
