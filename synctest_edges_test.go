//go:build linux

package gatenet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// The edges of fake time (pollfd/bubble.go, "Unpairing"): descriptors used
// across bubbles, from outside them, or behind gatenet's back. Each case
// runs in a child process, so that a fatal error in the runtime fails one
// test instead of the whole run.

const synctestChildEnv = "GATENET_SYNCTEST_CHILD=1"

// TestSynctestEdges runs each edge case in a child process.
func TestSynctestEdges(t *testing.T) {
	for _, name := range []string{
		"TestSynctestChildPipeNextBubble",
		"TestSynctestChildPipeTwoBubbles",
		"TestSynctestChildOutsideClose",
		"TestSynctestChildHandedOut",
		"TestSynctestChildTCPSlowReader",
		"TestSynctestChildReadyQueueTimeout",
		"TestSynctestChildReadyQueueLateWrite",
		"TestSynctestChildReadyQueueOutsidePeer",
		"TestSynctestChildUDPConnected",
		"TestSynctestChildUDPUnconnected",
		"TestSynctestChildUnixgram",
		"TestSynctestChildUDPOutsideSender",
		"TestSynctestChildUDPNotReached",
		"TestSynctestChildUDPRawConn",
		"TestSynctestChildUDPRefused",
		"TestSynctestChildUDPRawConnSend",
		"TestSynctestChildLockHeldOutside", // synctest_locks_test.go
		"TestSynctestChildCloseWhileOutsideReads",
		"TestSynctestChildSharedFixtureLock",
		"TestSynctestChildLockInBubble",
		"TestSynctestChildLockInBubbleListener",
		"TestSynctestChildLockInBubbleDatagram",
		"TestSynctestChildDeadlineOutsideReader",
		"TestSynctestChildDeadlineOtherBubble",
		"TestSynctestChildContextFromOutside", // synctest_ctx_test.go
		"TestSynctestChildDialCancelOutside",
		"TestSynctestChildPlainContext",
		"TestSynctestChildFaultDelays",
		"TestSynctestChildProcessPipes", // pipe_exec_synctest_test.go
	} {
		t.Run(name, func(t *testing.T) {
			out := testutil.RunChild(t, name, synctestChildEnv)
			for _, line := range bytes.Split([]byte(out), []byte("\n")) {
				if bytes.Contains(line, []byte("fake time")) {
					t.Logf("%s", bytes.TrimSpace(line))
				}
			}
		})
	}
}

// childOnly skips a child test unless TestSynctestEdges started it.
func childOnly(t *testing.T) {
	if os.Getenv("GATENET_SYNCTEST_CHILD") == "" {
		t.Skip("run by TestSynctestEdges in a child process")
	}
}

// TestSynctestChildPipeNextBubble: a pipe made in one bubble and read in
// the next, after the first ended: the second bubble's waits are ordinary
// ones (a deadline on the real clock), never a durable park on the first
// bubble's behalf.
func TestSynctestChildPipeNextBubble(t *testing.T) {
	childOnly(t)
	var r, w *gatenet.File
	inBubble(t, func(t *testing.T) {
		var err error
		r, w, err = gatenet.Pipe()
		require.NoError(t, err)
		_, err = w.Write([]byte("from A"))
		require.NoError(t, err)
	})
	inBubble(t, func(t *testing.T) {
		buf := make([]byte, 16)
		n, err := r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "from A", string(buf[:n]))
		_, err = w.Write([]byte("from B"))
		require.NoError(t, err)
		n, err = r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "from B", string(buf[:n]))
		require.NoError(t, r.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
		_, err = r.Read(buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	})
	require.NoError(t, r.Close())
	require.NoError(t, w.Close())
}

// TestSynctestChildPipeTwoBubbles: a pipe made in bubble A is read in
// bubble B while A writes 1 MiB through it, both bubbles running at once:
// B's first read unpairs the pipe, so A's full-pipe writes park as
// ordinary waits that B's reads end, and neither bubble is taken for
// deadlocked.
func TestSynctestChildPipeTwoBubbles(t *testing.T) {
	childOnly(t)
	handoff := make(chan *gatenet.File, 1) // made outside both bubbles
	started := make(chan struct{})
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	t.Run("A", func(t *testing.T) {
		t.Parallel()
		inBubble(t, func(t *testing.T) {
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			_, err = w.Write(want[:1])
			require.NoError(t, err)
			handoff <- r
			<-started
			_, err = w.Write(want[1:])
			require.NoError(t, err)
			require.NoError(t, w.Close())
		})
	})
	t.Run("B", func(t *testing.T) {
		t.Parallel()
		inBubble(t, func(t *testing.T) {
			r := <-handoff
			got := make([]byte, 1)
			_, err := io.ReadFull(r, got)
			require.NoError(t, err)
			close(started)
			rest, err := io.ReadAll(r)
			require.NoError(t, err)
			require.True(t, bytes.Equal(want, append(got, rest...)), "byte-exact")
			require.NoError(t, r.Close())
		})
	})
}

// TestSynctestChildOutsideClose: while a goroutine of a busy bubble reads,
// a goroutine outside it sets a deadline on one descriptor and closes
// another: both calls return at once, as over net, and the readers see
// the deadline and ErrClosed.
func TestSynctestChildOutsideClose(t *testing.T) {
	childOnly(t)
	type pipe struct{ r, w *gatenet.File }
	handoff := make(chan pipe, 2)
	acted := make(chan struct{})
	go func() {
		defer close(acted)
		deadline, closing := <-handoff, <-handoff
		time.Sleep(10 * time.Millisecond) // let the readers park
		if err := deadline.r.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
			panic(err)
		}
		if err := closing.r.Close(); err != nil {
			panic(err)
		}
	}()
	inBubble(t, func(t *testing.T) {
		var pipes [2]pipe
		for i := range pipes {
			r, w, err := gatenet.Pipe()
			require.NoError(t, err)
			pipes[i] = pipe{r, w}
		}
		errs := make(chan error, 2)
		for _, p := range pipes {
			go func() {
				_, err := p.r.Read(make([]byte, 1))
				errs <- err
			}()
		}
		handoff <- pipes[0]
		handoff <- pipes[1]
		busy := true
		for busy { // the bubble stays busy: its clock does not move
			select {
			case <-acted:
				busy = false
			default:
				time.Sleep(0)
			}
		}
		var got []error
		for range pipes {
			got = append(got, <-errs)
		}
		require.Condition(t, func() bool {
			deadline, closed := 0, 0
			for _, err := range got {
				switch {
				case errors.Is(err, os.ErrDeadlineExceeded):
					deadline++
				case errors.Is(err, os.ErrClosed):
					closed++
				}
			}
			return deadline == 1 && closed == 1
		}, "one deadline, one ErrClosed: %v", got)
		require.NoError(t, pipes[0].r.Close())
		for _, p := range pipes {
			require.NoError(t, p.w.Close())
		}
	})
}

// TestSynctestChildHandedOut: once a descriptor's number has left
// gatenet's hands, bytes written through it by write(2), here from outside
// the bubble, reach the peer's reader, which no longer parks durably: a
// pipe's write end through Fd, a TCP conn through its RawConn.
func TestSynctestChildHandedOut(t *testing.T) {
	childOnly(t)
	writes := make(chan func(), 2) // run outside the bubble, after a real pause
	go func() {
		for write := range writes {
			time.Sleep(10 * time.Millisecond)
			write()
		}
	}()
	defer close(writes)
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		fd := int(w.Fd())
		writes <- func() { unix.Write(fd, []byte("by write(2)")) }
		buf := make([]byte, 32)
		n, err := r.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "by write(2)", string(buf[:n]))
		require.NoError(t, r.Close())
		require.NoError(t, w.Close())

		c, s := testutil.TCPPair(t)
		rc, err := c.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) {
			writes <- func() { unix.Write(int(fd), []byte("raw")) }
		}))
		n, err = s.Read(buf)
		require.NoError(t, err)
		require.Equal(t, "raw", string(buf[:n]))
		require.NoError(t, c.Close())
		require.NoError(t, s.Close())
	})
}

// TestSynctestChildTCPSlowReader: a writer blocked on a full send buffer
// while the reader sleeps a fake second between 64 KiB reads: the writer
// parks durably, so 4 MiB crosses in fake time, byte-exact.
func TestSynctestChildTCPSlowReader(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		c, s := testutil.TCPPair(t)
		want := bytes.Repeat([]byte("slow reader....."), 4<<20/16)
		written := make(chan error, 1)
		go func() {
			_, err := c.Write(want)
			written <- err
			c.Close()
		}()
		var got bytes.Buffer
		buf := make([]byte, 64<<10)
		start := time.Now()
		for {
			n, err := s.Read(buf)
			got.Write(buf[:n])
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			time.Sleep(time.Second)
		}
		require.NoError(t, <-written)
		require.True(t, bytes.Equal(want, got.Bytes()), "byte-exact: %d of %d bytes", got.Len(), len(want))
		require.GreaterOrEqual(t, time.Since(start), 10*time.Second, "the reader's sleeps ran on the fake clock")
		require.NoError(t, s.Close())
	})
}

// TestSynctestDurableParkReportsDurable: a reader parked on a pipe of its
// bubble is durably blocked (synctest.Wait returns), and its goroutine
// shows the wait reason sema_durable.go hands the runtime by number.
func TestSynctestDurableParkReportsDurable(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := r.Read(make([]byte, 1))
			done <- err
		}()
		synctest.Wait()
		buf := make([]byte, 1<<20)
		dump := string(buf[:runtime.Stack(buf, true)])
		var header string
		for _, g := range strings.Split(dump, "\n\n") {
			if strings.Contains(g, "(*durableSema).park") {
				header = strings.SplitN(g, "\n", 2)[0]
			}
		}
		require.Contains(t, header, "[sync.Cond.Wait (durable), synctest bubble ", "the reader's goroutine:\n%s", dump)
		_, err = w.Write([]byte("x"))
		require.NoError(t, err)
		require.NoError(t, <-done)
		require.NoError(t, r.Close())
		require.NoError(t, w.Close())
	})
}

// TestSynctestChildReadyQueueTimeout: Next on a queue of the bubble whose
// members are the bubble's, with nothing ready, sleeps durably: its
// context's 30 s timeout fires on the fake clock.
func TestSynctestChildReadyQueueTimeout(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		c, s := testutil.TCPPair(t)
		q := gatenet.NewReadyQueue()
		defer q.Close()
		require.NoError(t, q.Add(s))
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		start := time.Now()
		p, err := q.Next(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Nil(t, p)
		require.Equal(t, 30*time.Second, time.Since(start), "the timeout ran on the fake clock")
		require.NoError(t, c.Close())
		require.NoError(t, s.Close())
	})
}

// TestSynctestChildReadyQueueLateWrite: a goroutine of the bubble writes
// to a member's peer after a fake 10 s sleep; Next, asleep durably
// meanwhile, returns the member then.
func TestSynctestChildReadyQueueLateWrite(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		q := gatenet.NewReadyQueue()
		defer q.Close()
		c, s := testutil.TCPPair(t)
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		require.NoError(t, q.Add(s))
		require.NoError(t, q.Add(r))
		go func() {
			time.Sleep(10 * time.Second)
			c.Write([]byte("late"))
			time.Sleep(10 * time.Second)
			w.Write([]byte("later"))
		}()
		start := time.Now()
		for _, want := range []struct {
			p    gatenet.Pollable
			data string
		}{{s, "late"}, {r, "later"}} {
			p, err := q.Next(t.Context())
			require.NoError(t, err)
			require.Equal(t, want.p, p)
			buf := make([]byte, 8)
			n, err := p.(io.Reader).Read(buf)
			require.NoError(t, err)
			require.Equal(t, want.data, string(buf[:n]))
		}
		require.Equal(t, 20*time.Second, time.Since(start), "each write came after its fake sleep")
		for _, c := range []io.Closer{c, s, r, w} {
			require.NoError(t, c.Close())
		}
	})
}

// TestSynctestChildReadyQueueOutsidePeer: a member whose peer is net's
// keeps Next from sleeping durably (the peer's bytes come from outside the
// bubble), so the bubble does not idle and its clock stands still; the
// context's timeout then ends Next on the real clock, as net's deadlines
// do in a bubble, instead of never.
func TestSynctestChildReadyQueueOutsidePeer(t *testing.T) {
	childOnly(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	inBubble(t, func(t *testing.T) {
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		q := gatenet.NewReadyQueue()
		defer q.Close()
		require.NoError(t, q.Add(c.(gatenet.Pollable)))
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err = q.Next(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, c.Close())
	})
}
