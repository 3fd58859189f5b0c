//go:build linux

package gatenet_test

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// A copy with a pipe at one end or both splices straight from one to the
// other. When its destination is closed or past its write deadline, the
// copy answers as net's and os's do, which read the source before they
// write: at the source's end it is done, with (0, nil); while the source
// is idle it waits for it; once the source has bytes, the destination's
// error ends it.

// copyEnd is one end of a copy: a pipe's or a TCP conn's.
type copyEnd interface {
	io.ReadWriteCloser
	SetWriteDeadline(time.Time) error
}

// sourceFirstStack makes the ends of a copy with the standard library's
// types or with gatenet's.
type sourceFirstStack struct {
	name string
	pipe func(t *testing.T) (r, w copyEnd)
	tcp  func(t *testing.T) (c, s copyEnd)
}

func sourceFirstStacks() []sourceFirstStack {
	tcpWith := func(pair func(testing.TB, string, string) (net.Conn, net.Conn)) func(t *testing.T) (copyEnd, copyEnd) {
		return func(t *testing.T) (copyEnd, copyEnd) {
			c, s := pair(t, "tcp4", "127.0.0.1:0")
			return c, s
		}
	}
	return []sourceFirstStack{
		{
			name: "std",
			pipe: func(t *testing.T) (copyEnd, copyEnd) {
				r, w, err := os.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { r.Close(); w.Close() })
				return r, w
			},
			tcp: tcpWith(testutil.NetPair),
		},
		{
			name: "gatenet",
			pipe: func(t *testing.T) (copyEnd, copyEnd) {
				r, w, err := gatenet.Pipe()
				require.NoError(t, err)
				t.Cleanup(func() { r.Close(); w.Close() })
				return r, w
			},
			tcp: tcpWith(testutil.Pair),
		},
	}
}

func TestSpliceSourceFirst(t *testing.T) {
	past := time.Now().Add(-time.Second)
	// Each case makes src and dst with a stack's constructors and returns
	// the copy to run, and what makes src end or gives it bytes.
	type copyCase struct {
		name string
		make func(t *testing.T, st sourceFirstStack) (run func() (int64, error), feed copyEnd, src io.Reader)
	}
	cases := []copyCase{
		{"pipe to tcp, past deadline", func(t *testing.T, st sourceFirstStack) (func() (int64, error), copyEnd, io.Reader) {
			r, w := st.pipe(t)
			c, _ := st.tcp(t)
			c.SetWriteDeadline(past)
			return func() (int64, error) { return io.Copy(c, r) }, w, r
		}},
		{"pipe to tcp, closed, ReadFrom", func(t *testing.T, st sourceFirstStack) (func() (int64, error), copyEnd, io.Reader) {
			r, w := st.pipe(t)
			c, _ := st.tcp(t)
			c.Close()
			return func() (int64, error) { return c.(io.ReaderFrom).ReadFrom(r) }, w, r
		}},
		{"tcp to pipe, past deadline", func(t *testing.T, st sourceFirstStack) (func() (int64, error), copyEnd, io.Reader) {
			c, s := st.tcp(t)
			_, w := st.pipe(t)
			w.SetWriteDeadline(past)
			return func() (int64, error) { return io.Copy(w, c) }, s, c
		}},
		{"pipe to pipe, past deadline", func(t *testing.T, st sourceFirstStack) (func() (int64, error), copyEnd, io.Reader) {
			r, w := st.pipe(t)
			_, w2 := st.pipe(t)
			w2.SetWriteDeadline(past)
			return func() (int64, error) { return io.Copy(w2, r) }, w, r
		}},
	}
	type outcome struct {
		n     int64
		shape string
		left  string // what src still held after a copy ended by dst's error
	}
	for _, cc := range cases {
		t.Run(cc.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 2*time.Minute)
			results := map[string][3]outcome{}
			for _, st := range sourceFirstStacks() {
				var got [3]outcome
				// At its end already: nothing to copy, (0, nil).
				run, feed, _ := cc.make(t, st)
				feed.Close()
				n, err := run()
				got[0] = outcome{n: n, shape: errShape(err)}

				// Idle when the copy begins: it waits for the source,
				// then ends with it.
				run, feed, _ = cc.make(t, st)
				done := make(chan outcome, 1)
				go func() {
					n, err := run()
					done <- outcome{n: n, shape: errShape(err)}
				}()
				feed.Close()
				got[1] = <-done

				// With bytes: the destination's error ends the copy.
				run, feed, src := cc.make(t, st)
				_, err = feed.Write([]byte("abc"))
				require.NoError(t, err)
				n, err = run()
				got[2] = outcome{n: n, shape: errShape(err)}
				require.Error(t, err, "%s: a copy with bytes into a failed destination", st.name)
				if st.name == "gatenet" { // os's and net's read them into a buffer and lose them
					feed.Close()
					left, err := io.ReadAll(src)
					require.NoError(t, err)
					got[2].left = string(left)
				}
				results[st.name] = got
			}
			std, gn := results["std"], results["gatenet"]
			require.Equal(t, outcome{n: 0, shape: ""}, std[0], "std at the source's end")
			for i, what := range []string{"at the source's end", "idle, then at its end", "with bytes"} {
				require.Equal(t, std[i].n, gn[i].n, what)
				require.Equal(t, std[i].shape, gn[i].shape, what)
			}
			require.Equal(t, "abc", gn[2].left, "the bytes stay in the source")
		})
	}
}
