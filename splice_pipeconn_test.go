//go:build linux

package gatenet_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

// Copies from a pipe into a stream conn, side by side with net and os.
// os splices from a pipe only into a file, so the standard library copies
// pipe to conn through a buffer: in the conn's ReadFrom where it has one
// (TCP: its "readfrom" *net.OpError around the failing end's own error),
// else in io.Copy (Unix: the failing end's error bare). gatenet splices,
// and must report the same errors.

// pipeConnCopyObs is what a pipe-to-conn copy shows its caller.
type pipeConnCopyObs struct {
	Err sockErrObs
	N   int64
}

func TestSplicePipeToConnParity(t *testing.T) {
	type copyWay struct {
		name string
		copy func(dst net.Conn, src io.Reader) (int64, error)
	}
	ways := []copyWay{
		{"io.Copy", func(dst net.Conn, src io.Reader) (int64, error) { return io.Copy(dst, src) }},
		{"WriteTo", func(dst net.Conn, src io.Reader) (int64, error) { return src.(io.WriterTo).WriteTo(dst) }},
		{"ReadFrom", nil}, // TCP only: net's UnixConn has no ReadFrom(io.Reader)
	}
	cases := []struct {
		name  string
		fill  bool                                                   // the pipe holds a payload; else it is empty with a read deadline
		setup func(t *testing.T, network string, dst, peer net.Conn) // makes the destination fail
	}{
		{"dst-reset", true, func(t *testing.T, network string, dst, peer net.Conn) {
			if network == "tcp" {
				require.NoError(t, peer.(interface{ SetLinger(int) error }).SetLinger(0)) // Close sends a reset
			}
			require.NoError(t, peer.Close())
			if network == "tcp" {
				sockWaitTCPState(t, dst, unix.BPF_TCP_CLOSE)
			}
		}},
		{"dst-closed", true, func(t *testing.T, _ string, dst, _ net.Conn) { require.NoError(t, dst.Close()) }},
		{"dst-deadline", true, func(t *testing.T, _ string, dst, _ net.Conn) {
			require.NoError(t, dst.SetWriteDeadline(time.Now().Add(-time.Second)))
		}},
		{"src-deadline", false, nil},
	}
	for _, way := range ways {
		for _, tc := range cases {
			t.Run(way.name+"/"+tc.name, func(t *testing.T) {
				sockParityStreams(t, func(t *testing.T, s sockStack, network string) pipeConnCopyObs {
					copyFn := way.copy
					if copyFn == nil {
						if network != "tcp" {
							t.Skip("a Unix conn has no ReadFrom(io.Reader)")
						}
						copyFn = func(dst net.Conn, src io.Reader) (int64, error) { return dst.(io.ReaderFrom).ReadFrom(src) }
					}
					// The peer is the dialled end, so that the pipe is
					// "|0" on both sides and the copy's conn names <L>, <R>.
					peer, dst, _ := sockPair(t, s, network)
					var r, w fileLike
					if s.isNet() {
						r, w = newOSPipe(t)
					} else {
						gr, gw, err := gatenet.Pipe()
						require.NoError(t, err)
						closeFilesAtEnd(t, gr, gw)
						r, w = gr, gw
					}
					if tc.fill {
						_, err := w.Write(bytes.Repeat([]byte{'x'}, pipeCopyPayload))
						require.NoError(t, err)
						require.NoError(t, w.Close())
						tc.setup(t, network, dst, peer)
					} else {
						require.NoError(t, r.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
					}
					names := sockPairNames(dst)
					n, err := copyFn(dst, r)
					return pipeConnCopyObs{Err: sockObserve(err, names), N: n}
				}, func(t *testing.T, s sockStack, network string, obs pipeConnCopyObs) {
					require.False(t, obs.Err.Nil, "the copy must fail here")
				})
			})
		}
	}
}
