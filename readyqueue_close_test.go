//go:build linux

package gatenet_test

// The ReadyQueue's write side at its edges: Writes from many goroutines,
// a closed queue, a closed conn, and the conns CloseWhenFlushed hands to
// the queue when the queue can no longer send their output.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// runs counts the runs of equal bytes in b.
func runs(b []byte) int {
	n := 0
	for len(b) > 0 {
		i := bytes.IndexFunc(b, func(r rune) bool { return byte(r) != b[0] })
		n++
		if i < 0 {
			break
		}
		b = b[i:]
	}
	return n
}

// isClosed reports whether c was closed, without blocking and without
// writing: setting a deadline on a closed conn fails with net.ErrClosed.
func isClosed(c net.Conn) bool {
	return errors.Is(c.SetReadDeadline(time.Time{}), net.ErrClosed)
}

// TestReadyQueueConcurrentWritesWhole: two goroutines Write to a member
// at once, its peer reading meanwhile: each Write's bytes arrive whole,
// one Write after the other, as net.Conn's do, including the first Writes
// a member gets (which find no output kept yet).
func TestReadyQueueConcurrentWritesWhole(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	const size = 8 << 20
	writes := [][]byte{bytes.Repeat([]byte("A"), size), bytes.Repeat([]byte("B"), size)}
	for round := range 4 {
		q, c, s := watchedPair(t)
		workers := startEchoWorkers(q, 1, 4096) // its Nexts send what waits
		got := make(chan []byte, 1)
		go func() {
			c.SetReadDeadline(time.Now().Add(time.Minute))
			b, _ := io.ReadAll(io.LimitReader(c, 2*size))
			got <- b
		}()
		var wg sync.WaitGroup
		for _, b := range writes {
			wg.Go(func() {
				n, err := q.Write(s, b)
				if err != nil || n != len(b) {
					t.Errorf("Write: %d, %v", n, err)
				}
			})
		}
		wg.Wait()
		b := <-got
		workers.Stop()
		require.Len(t, b, 2*size, "round %d", round)
		require.Equal(t, 2, runs(b), "round %d: the two Writes' bytes interleaved", round)
	}
}

// TestReadyQueueClosedQueueRefuses: after Close, Write keeps nothing and
// fails, as does Add of a member whose reads are held for its output, and
// CloseWhenFlushed closes the conn at once, saying its output was dropped;
// each error is net's closed error.
func TestReadyQueueClosedQueueRefuses(t *testing.T) {
	testutil.CheckLeaks(t)
	q, c, s := watchedPair(t)
	require.NoError(t, q.SetOutputLimit(0)) // reads held as soon as output waits
	_, err := q.Write(s, make([]byte, 8<<20))
	require.NoError(t, err)
	require.Positive(t, q.Buffered(s))
	require.NoError(t, q.Close())

	var op *net.OpError
	for _, size := range []int{1, 8 << 20} {
		n, err := q.Write(s, make([]byte, size))
		require.ErrorIs(t, err, net.ErrClosed, "Write of %d bytes", size)
		require.ErrorAs(t, err, &op)
		require.Equal(t, "write", op.Op)
		require.Zero(t, n)
	}
	err = q.Add(s)
	require.ErrorIs(t, err, net.ErrClosed, "Add of a member whose reads are held")
	require.ErrorAs(t, err, &op)

	err = q.CloseWhenFlushed(s)
	require.ErrorIs(t, err, net.ErrClosed, "output waited: it is dropped")
	require.True(t, isClosed(s), "CloseWhenFlushed on a closed queue closes the conn")
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err = io.Copy(io.Discard, c)
	require.NoError(t, err, "the peer reads what was sent, then end of stream")
}

// TestReadyQueueCloseDropsOutput: Close drops the output Write kept for
// members whose peers do not read, as it says: Buffered is 0 after it,
// and the memory goes with the queue, though the conns stay open.
func TestReadyQueueCloseDropsOutput(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	const conns, size = 8, 4 << 20
	q := gatenet.NewReadyQueue()
	var members []*gatenet.TCPConn
	for range conns {
		_, s := gatenetTCPPair(t) // the peer never reads
		require.NoError(t, s.SetWriteBuffer(4096))
		require.NoError(t, q.Add(s))
		n, err := q.Write(s, make([]byte, size))
		require.NoError(t, err)
		require.Equal(t, size, n)
		members = append(members, s)
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, q.Close())
	for _, s := range members {
		require.Zero(t, q.Buffered(s), "Buffered after Close")
		require.False(t, isClosed(s), "Close closes no member")
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	require.Less(t, after.HeapAlloc, before.HeapAlloc-conns*size/2,
		"%d MiB on the heap before Close, %d MiB after: the kept output is still reachable", before.HeapAlloc>>20, after.HeapAlloc>>20)
	runtime.KeepAlive(q)
	runtime.KeepAlive(members)
}

// TestReadyQueueCloseClosesFlushing: a conn given to CloseWhenFlushed
// belongs to the queue; Close, or Remove, which can no longer send its
// output, closes it then and there (its peer reads end of stream), with no
// garbage collection needed.
func TestReadyQueueCloseClosesFlushing(t *testing.T) {
	for _, end := range []string{"Close", "Remove"} {
		t.Run(end, func(t *testing.T) {
			testutil.CheckLeaks(t)
			q, c, s := watchedPair(t)
			defer q.Close()
			_, err := q.Write(s, make([]byte, 8<<20))
			require.NoError(t, err)
			require.Positive(t, q.Buffered(s), "8 MiB into a socket nobody reads: some must wait")
			require.NoError(t, q.CloseWhenFlushed(s))
			require.False(t, isClosed(s), "still open: its output waits")

			if end == "Close" {
				require.NoError(t, q.Close())
			} else {
				q.Remove(s)
			}
			require.True(t, isClosed(s), "%s left the conn open", end)
			c.SetReadDeadline(time.Now().Add(time.Minute))
			_, err = io.Copy(io.Discard, c)
			require.NoError(t, err, "the peer reads end of stream")
		})
	}
}

// TestReadyQueueWriteClosedMember: Write to a conn or pipe closed under
// the queue fails as a write to it would, with the closed error, not as a
// write to a stranger.
func TestReadyQueueWriteClosedMember(t *testing.T) {
	testutil.CheckLeaks(t)
	q, _, s := watchedPair(t)
	defer q.Close()
	require.NoError(t, s.Close())
	_, err := q.Write(s, []byte("x"))
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.Equal(t, "write", op.Op)
	require.ErrorIs(t, err, net.ErrClosed)
	require.NotContains(t, err.Error(), "Add it first")

	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, q.Add(w))
	require.NoError(t, w.Close())
	_, err = q.Write(w, []byte("x"))
	require.ErrorIs(t, err, os.ErrClosed)
}

// TestReadyQueueClosedErrorsForFiles: a File member gets os.ErrClosed, as
// from its own methods, where a conn gets net.ErrClosed: from Add and
// Write on a closed queue, and from Write after CloseWhenFlushed while its
// output waits.
func TestReadyQueueClosedErrorsForFiles(t *testing.T) {
	testutil.CheckLeaks(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	_, s := testutil.TCPPair(t)

	q := gatenet.NewReadyQueue()
	require.NoError(t, q.Add(w))
	require.NoError(t, q.Close())
	_, err = q.Write(w, []byte("x"))
	require.ErrorIs(t, err, os.ErrClosed)
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorIs(t, q.Add(r), os.ErrClosed)
	_, err = q.Write(s, []byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
	require.NotErrorIs(t, err, os.ErrClosed) // as a closed net conn's

	q = gatenet.NewReadyQueue()
	defer q.Close()
	require.NoError(t, q.Add(w))
	_, err = q.Write(w, make([]byte, 4<<20)) // more than the pipe takes
	require.NoError(t, err)
	require.Positive(t, q.Buffered(w))
	require.NoError(t, q.CloseWhenFlushed(w))
	_, err = q.Write(w, []byte("x"))
	var op *net.OpError
	require.ErrorAs(t, err, &op)
	require.ErrorIs(t, err, os.ErrClosed)
}

// TestReadyQueueCloseWhenFlushedNoQueue: CloseWhenFlushed on a queue not
// made by NewReadyQueue reports that, and still closes the conn it was
// given, as its doc promises.
func TestReadyQueueCloseWhenFlushedNoQueue(t *testing.T) {
	testutil.CheckLeaks(t)
	var nilQueue *gatenet.ReadyQueue
	for name, q := range map[string]*gatenet.ReadyQueue{"nil": nilQueue, "zero": {}} {
		_, s := testutil.TCPPair(t)
		err := q.CloseWhenFlushed(s)
		var op *net.OpError
		require.ErrorAs(t, err, &op, name)
		require.Contains(t, err.Error(), "NewReadyQueue", name)
		require.True(t, isClosed(s), name)
	}
	var q *gatenet.ReadyQueue
	require.Error(t, q.CloseWhenFlushed(nil))
}

// TestReadyQueueRemoveDuringFlush: Remove while a Next is sending the
// member's held output, the worker having handed it back. A flush under
// way used to end its hold after Remove returned and watch the member
// again, so another queue's Add failed ("already in another ReadyQueue")
// and q reported the member again (about 5% of rounds). Remove now waits
// for the flush.
func TestReadyQueueRemoveDuringFlush(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for i := range 100 {
		q := gatenet.NewReadyQueue()
		require.NoError(t, q.SetOutputLimit(0))
		c, s := testutil.TCPPair(t)
		require.NoError(t, q.Add(s))
		_, err := c.Write([]byte("x"))
		require.NoError(t, err)
		_, err = nextWithin(q, time.Minute)
		require.NoError(t, err)
		_, err = io.ReadFull(s, make([]byte, 1))
		require.NoError(t, err)
		_, err = q.Write(s, make([]byte, 4<<20+i*997))
		require.NoError(t, err)
		require.NoError(t, q.Add(s)) // held: the flush that ends the hold watches s again
		flushed := make(chan struct{})
		go func() { // Next sends the output as c reads it
			defer close(flushed)
			for {
				if _, err := q.Next(context.Background()); err != nil {
					return
				}
			}
		}()
		read := make(chan struct{})
		go func() {
			defer close(read)
			c.SetReadDeadline(time.Now().Add(time.Minute))
			io.Copy(io.Discard, c)
		}()
		time.Sleep(time.Duration(i%30) * 100 * time.Microsecond) // a different point of the flush each round
		q.Remove(s)
		q2 := gatenet.NewReadyQueue()
		require.NoError(t, q2.Add(s), "round %d: still watched after Remove", i)
		q2.Close()
		require.NoError(t, s.Close())
		<-read
		q.Close()
		<-flushed
		c.Close()
	}
}
