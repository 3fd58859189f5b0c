//go:build linux

package gatenet_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"math/rand"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// nextWithin is q.Next bounded by d (a hang detector, not a timing check).
func nextWithin(q *gatenet.ReadyQueue, d time.Duration) (gatenet.Pollable, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return q.Next(ctx)
}

// watchedPair starts a test with leak checks and a watchdog: a queue
// (closed at the end) watching the server end s of a gatenet TCP pair.
func watchedPair(t *testing.T) (q *gatenet.ReadyQueue, c, s *gatenet.TCPConn) {
	t.Helper()
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	q = gatenet.NewReadyQueue()
	t.Cleanup(func() { q.Close() })
	c, s = gatenetTCPPair(t)
	require.NoError(t, q.Add(s))
	return q, c, s
}

func TestReadyQueueOncePerEdge(t *testing.T) {
	q, c, s := watchedPair(t)

	// Nothing readable: nothing reported.
	_, err := nextWithin(q, 30*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Two writes while unread: one report, then none until the worker is
	// done with it.
	_, err = c.Write([]byte("a"))
	require.NoError(t, err)
	got, err := nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, got)
	_, err = c.Write([]byte("b"))
	require.NoError(t, err)
	_, err = nextWithin(q, 30*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "reported twice while held by a worker")

	// The worker reads what is there and hands it back: still readable?
	// No — so no report until new data.
	buf := make([]byte, 8)
	n, err := s.Read(buf)
	require.NoError(t, err)
	if n == 1 { // "a" and "b" may arrive as one read or two
		_, err = s.Read(buf)
		require.NoError(t, err)
	}
	require.NoError(t, q.Add(s))
	_, err = nextWithin(q, 30*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = c.Write([]byte("c"))
	require.NoError(t, err)
	got, err = nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, got)

	// Handed back unread: reported again at once.
	require.NoError(t, q.Add(s))
	got, err = nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, got)

	// A worker whose Read parks (would block) re-arms it: the next data
	// wakes that Read, not the queue; after the worker gives up on a
	// deadline, new data goes to the queue.
	_, err = s.Read(buf) // "c"
	require.NoError(t, err)
	// Only a Read that parks re-arms s: one whose deadline passed before
	// it got that far (a loaded machine) fails without, and is tried
	// again with a longer one. s is on the default poller, which counts
	// the park.
	testutil.RetrySlow(t, 20*time.Millisecond, "the worker's Read parked", func(d time.Duration) bool {
		parks := pollfd.Default().Stats().Parks
		require.NoError(t, s.SetReadDeadline(time.Now().Add(d)))
		_, err = s.Read(buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		return pollfd.Default().Stats().Parks == parks
	})
	require.NoError(t, s.SetReadDeadline(time.Time{}))
	_, err = c.Write([]byte("d"))
	require.NoError(t, err)
	got, err = nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, got)
}

func TestReadyQueueCloseAndRemove(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	q := gatenet.NewReadyQueue()
	c1, s1 := gatenetTCPPair(t)
	c2, s2 := gatenetTCPPair(t)
	require.NoError(t, q.Add(s1))
	require.NoError(t, q.Add(s2))

	// s1 becomes readable and is queued, then closes: never reported.
	_, err := c1.Write([]byte("x"))
	require.NoError(t, err)
	waitQueued(t, q, 1)
	require.NoError(t, s1.Close())
	// s2 removed: its data is not reported either.
	q.Remove(s2)
	_, err = c2.Write([]byte("y"))
	require.NoError(t, err)
	_, err = nextWithin(q, 50*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Adding a closed conn fails; Close wakes Next with net.ErrClosed.
	require.ErrorIs(t, q.Add(s1), net.ErrClosed)
	done := make(chan error, 1)
	go func() { _, err := q.Next(context.Background()); done <- err }()
	require.NoError(t, q.Close())
	require.ErrorIs(t, <-done, net.ErrClosed)
}

func waitQueued(t *testing.T, q *gatenet.ReadyQueue, n int) {
	t.Helper()
	for limit := time.Now().Add(time.Minute); q.Len() < n; {
		require.True(t, time.Now().Before(limit), "never queued")
		time.Sleep(time.Millisecond)
	}
}

// TestReadyQueueWorkers: many connections, one queue, a few workers; every
// byte arrives, in order per connection.
func TestReadyQueueWorkers(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	conns, perConn := 1000, 1000 // 10^6 messages
	if testing.Short() {
		conns, perConn = 200, 200
	}
	const msgSize = 16
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	q := gatenet.NewReadyQueue()
	defer q.Close()

	type stream struct {
		got  int
		hash [32]byte
		h    interface {
			io.Writer
			Sum([]byte) []byte
		}
	}
	var mu sync.Mutex
	streams := map[gatenet.Pollable]*stream{}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for i := 0; i < conns; i++ {
			c, err := ln.Accept()
			if err != nil {
				t.Errorf("accept: %v", err)
				return
			}
			p := c.(gatenet.Pollable)
			mu.Lock()
			streams[p] = &stream{h: sha256.New()}
			mu.Unlock()
			if err := q.Add(p); err != nil {
				t.Errorf("add: %v", err)
				return
			}
		}
	}()

	want := make([][32]byte, conns)
	var clients sync.WaitGroup
	clientConns := make([]net.Conn, conns)
	for i := range conns {
		c, err := gatenet.Dial("tcp4", ln.Addr().String())
		require.NoError(t, err)
		clientConns[i] = c
	}
	<-accepted
	for i, c := range clientConns {
		clients.Add(1)
		go func() {
			defer clients.Done()
			defer c.Close()
			rng := rand.New(rand.NewSource(int64(i)))
			h := sha256.New()
			msg := make([]byte, 0, 64*msgSize)
			for sent := 0; sent < perConn; {
				batch := min(1+rng.Intn(64), perConn-sent)
				msg = msg[:0]
				for j := 0; j < batch; j++ {
					var m [msgSize]byte
					binary.BigEndian.PutUint64(m[:], uint64(i))
					binary.BigEndian.PutUint64(m[8:], uint64(sent+j))
					msg = append(msg, m[:]...)
				}
				h.Write(msg)
				if _, err := c.Write(msg); err != nil {
					t.Errorf("client %d write: %v", i, err)
					return
				}
				sent += batch
			}
			copy(want[i][:], h.Sum(nil))
		}()
	}

	// Four workers: take a ready conn, read what is there, hand it back.
	// Two wait in Next with a context that can be done (on the queue's
	// channel), two with one that never is (in a park slot of the
	// runtime's poller): reports reach both kinds.
	total := int64(conns * perConn * msgSize)
	var received sync.WaitGroup
	received.Add(conns)
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	var workers sync.WaitGroup
	for w := 0; w < 4; w++ {
		ctx := cancellable
		if w%2 == 0 {
			ctx = context.Background()
		}
		workers.Add(1)
		go func() {
			defer workers.Done()
			buf := make([]byte, 4096)
			for {
				p, err := q.Next(ctx)
				if err != nil {
					return
				}
				c := p.(net.Conn)
				n, err := c.Read(buf)
				mu.Lock()
				s := streams[p]
				s.h.Write(buf[:n])
				s.got += n
				done := s.got == perConn*msgSize
				if done {
					copy(s.hash[:], s.h.Sum(nil))
				}
				mu.Unlock()
				if done {
					received.Done()
					continue
				}
				if err != nil && !errors.Is(err, io.EOF) {
					t.Errorf("worker read: %v", err)
					return
				}
				if err := q.Add(p); err != nil {
					t.Errorf("re-add: %v", err)
					return
				}
			}
		}()
	}
	clients.Wait()
	received.Wait()
	cancel()
	q.Close() // wakes the workers asleep in a slot
	workers.Wait()

	var sum int64
	for p, s := range streams {
		sum += int64(s.got)
		p.Close()
	}
	require.Equal(t, total, sum)
	// Match each server stream to its client by the id in its first message.
	for _, s := range streams {
		found := false
		for i := range want {
			if want[i] == s.hash {
				found = true
				break
			}
		}
		require.True(t, found, "a stream's SHA-256 matches no client's")
	}
}

// TestReadyQueueConcurrentNext: several goroutines in Next at once, as
// many readable conns: each Next gets a different conn, and none is
// reported twice.
func TestReadyQueueConcurrentNext(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	const n = 16
	q := gatenet.NewReadyQueue()
	defer q.Close()
	var clients []net.Conn
	for range n {
		c, s := gatenetTCPPair(t)
		require.NoError(t, q.Add(s))
		clients = append(clients, c)
	}
	got := make(chan gatenet.Pollable, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := nextWithin(q, time.Minute)
			if err != nil {
				t.Errorf("Next: %v", err)
				return
			}
			got <- p
		}()
	}
	for _, c := range clients {
		_, err := c.Write([]byte("x"))
		require.NoError(t, err)
	}
	wg.Wait()
	close(got)
	seen := map[gatenet.Pollable]bool{}
	for p := range got {
		require.False(t, seen[p], "one conn handed to two Next calls")
		seen[p] = true
	}
	require.Len(t, seen, n)
	_, err := nextWithin(q, 30*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a conn reported twice")
}

// TestReadyQueueEOF: a peer's close is reported as readiness, and the
// worker's read gives io.EOF; a read with a done context on an idle conn
// fails with the context's error without parking, and Add then reports
// the conn when data comes.
func TestReadyQueueEOF(t *testing.T) {
	q, c, s := watchedPair(t)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	buf := make([]byte, 8)

	// Idle: the read with a done context returns at once.
	_, err := s.ReadContext(done, buf)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, q.Add(s))
	_, err = c.Write([]byte("a"))
	require.NoError(t, err)
	got, err := nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, got)
	n, err := s.ReadContext(done, buf)
	require.NoError(t, err)
	require.Equal(t, "a", string(buf[:n]))
	require.NoError(t, q.Add(s))

	// The peer closes: reported, and the read gives io.EOF.
	require.NoError(t, c.Close())
	got, err = nextWithin(q, time.Minute)
	require.NoError(t, err)
	require.Same(t, s, got)
	_, err = s.ReadContext(done, buf)
	require.ErrorIs(t, err, io.EOF)
}

// TestReadyQueueOneQueueAtATime: a conn watched by one queue cannot be
// added to another until it is removed from the first.
func TestReadyQueueOneQueueAtATime(t *testing.T) {
	testutil.CheckLeaks(t)
	q1, q2 := gatenet.NewReadyQueue(), gatenet.NewReadyQueue()
	defer q1.Close()
	defer q2.Close()
	_, s := gatenetTCPPair(t)
	require.NoError(t, q1.Add(s))
	require.Error(t, q2.Add(s))
	q1.Remove(s)
	require.NoError(t, q2.Add(s))
}

// TestReadyQueueRemoveNotMember: Remove of a conn that another queue
// watches leaves it there, its output and its reports with it. It used to
// unwatch it from that queue: the output kept there was never sent and
// the conn never reported again.
func TestReadyQueueRemoveNotMember(t *testing.T) {
	q, c, s := watchedPair(t)
	other := gatenet.NewReadyQueue()
	defer other.Close()
	takeFromPeer(t, q, c, s)
	_, err := io.ReadFull(s, make([]byte, 1))
	require.NoError(t, err)
	payload := bytes.Repeat([]byte("x"), 4<<20) // more than the socket takes while c reads nothing
	n, err := q.Write(s, payload)
	require.NoError(t, err)
	require.Equal(t, len(payload), n)
	require.NoError(t, q.Add(s)) // handed back: the queue sends the rest when there is room
	kept := q.Buffered(s)
	require.Positive(t, kept, "the socket took all of 4 MiB")

	other.Remove(s)
	require.Equal(t, kept, q.Buffered(s), "another queue's Remove dropped q's output")

	// A Next sends the output as room comes; the peer reads it all.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	flushing := make(chan gatenet.Pollable, 1)
	go func() {
		p, _ := q.Next(ctx)
		flushing <- p
	}()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(time.Minute))) // a hang detector
	got, err := io.CopyN(io.Discard, c, int64(len(payload)))
	require.NoError(t, err, "q's output stopped after another queue's Remove")
	require.Equal(t, int64(len(payload)), got)
	cancel()
	if p := <-flushing; p != nil { // a stale report (see ReadyQueue): hand it back
		require.NoError(t, q.Add(p))
	}

	// And q still reports its member.
	_, err = c.Write([]byte("a"))
	require.NoError(t, err)
	p, err := nextWithin(q, time.Minute)
	require.NoError(t, err, "q stopped reporting its member")
	require.Same(t, s, p)
}

// TestReadyQueueEOFAfterShortRead: a client that writes a request and
// closes at once sends the data and its FIN in one edge. The worker's
// read takes the data, short of its buffer, and hands the conn back; the
// end of stream, still to be read, raises no new edge, and was never
// reported (the conn and its descriptor stayed with the queue for good).
// Now Add looks, since the peer hung up, and the EOF is reported.
func TestReadyQueueEOFAfterShortRead(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 2*time.Minute)
			q := gatenet.NewReadyQueue()
			defer q.Close()
			done, cancel := context.WithCancel(context.Background())
			cancel()
			buf := make([]byte, 4096)
			address := "127.0.0.1:0"
			if network == "unix" {
				address = t.TempDir() + "/s"
			}
			for range 10 {
				c, s := testutil.Pair(t, network, address)
				if network == "unix" {
					address = t.TempDir() + "/s"
				}
				_, err := c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
				require.NoError(t, err)
				require.NoError(t, c.Close())
				require.NoError(t, q.Add(s.(gatenet.Pollable)))
				got, err := nextWithin(q, 10*time.Second)
				require.NoError(t, err)
				n, err := got.(gatenet.ContextIO).ReadContext(done, buf)
				require.NoError(t, err)
				require.Equal(t, 18, n)
				require.NoError(t, q.Add(got))
				got, err = nextWithin(q, 10*time.Second)
				require.NoError(t, err, "the end of stream was not reported")
				_, err = got.(gatenet.ContextIO).ReadContext(done, buf)
				require.ErrorIs(t, err, io.EOF)
				require.NoError(t, got.Close())
			}
		})
	}
}
