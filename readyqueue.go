//go:build linux

package gatenet

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// ReadyQueue lets one goroutine watch many connections (or Files, or
// listeners) and hands out each one that becomes readable — with no
// goroutine and no buffer per connection. Next returns a connection once
// per edge of readiness; the caller (typically a worker) then reads it.
//
// Readable means a Read would not block: data has arrived, or the peer
// closed or hung up, or an error is pending. So Next reports end of file
// and hang-ups too, and the worker's read returns io.EOF or the error: it
// closes the connection then, and does not Add it again. A report says
// what was so when it was made, as an epoll edge does: the bytes it
// announces may already have been taken by the read before the Add (an
// edge that came while that read was under way), so a Read after Next
// can find nothing, and a blocking one would then park. Workers read
// without blocking, as below; one that does block should bound the read
// with a deadline.
//
// A connection is not reported again while it is being read: it becomes
// eligible again when a Read on it hits "would block" and parks (so the
// worker may read until then, bounding the last Read with a deadline or
// ReadContext), or when the worker hands it back with Add without reading
// that far. A worker that must not park on an idle connection reads
// without blocking — ReadContext (ContextIO) with a context already done
// returns what is there, or io.EOF, or the context's error if nothing is —
// again while its reads fill the buffer, and then hands it back with Add,
// which reports it again at once if more is readable. After a bounded
// number of full reads it hands back a connection that never runs dry
// only while other reports wait (Len) or its output does (Buffered): so
// no connection keeps a worker from the others, and none is passed from
// worker to worker for nothing, which would wake a sleeping one.
// ExampleReadyQueue is that loop. A connection that closes leaves the
// queue (Close is how a worker drops one; Remove stops watching it
// without closing it).
//
// Add after a read costs no system call when the read came back short or
// found nothing (on a stream socket: it took all there was): the queue
// already knows of anything that arrived since. After a full buffer, or
// with no read, Add looks with poll(2).
//
// Every method may be called from any number of goroutines at once: many
// workers may share one queue, each calling Next and Add. Each report goes
// to exactly one Next, so concurrent workers get distinct connections. A
// value is watched by one queue at a time: adding it to a second fails
// until Remove.
//
// Listen and Accept return net.Listener and net.Conn: Add takes
// c.(gatenet.Pollable).
//
// A worker that must not park on a conn whose peer does not read writes
// with q.Write: what the socket does not take at once the queue keeps and
// sends as the conn becomes writable, and while more than the output limit
// (SetOutputLimit, 256 KiB by default) waits the conn is not reported
// readable, so a client that never reads holds at most that much of the
// server's memory and no worker. ExampleReadyQueue's loop writes so.
//
// Close wakes the Nexts and lets go of the members, which may then be
// added to another queue, and drops the output Write kept for them
// (Buffered says how much waits). It closes none of them but those given
// to CloseWhenFlushed whose output still waits, which the queue owns, and
// it does not list them: a server that closes its conns at shutdown keeps
// its own set of them, as net/http's Server does.
//
// A ReadyQueue made in a testing/synctest bubble sleeps durably in Next
// (its context's timeout fires on the fake clock) while every member
// parks durably there; a member whose peer is not the bubble's keeps Next
// on the real clock, where a context deadline set in the bubble ends it.
type ReadyQueue struct {
	list        *pollfd.ReadyList
	outputLimit atomic.Int64
	closed      atomic.Bool // Close was called: Add and Write fail
	closing     memberSet   // given to CloseWhenFlushed, output waiting (readyqueue_write.go)
	held        memberSet   // read reports held past the output limit
	kept        memberSet   // output waits: Close drops it
}

// defaultOutputLimit is a new queue's output limit: four reads of the
// 64 KiB buffer a worker typically reads into.
const defaultOutputLimit = 256 << 10

// NewReadyQueue returns an empty queue.
func NewReadyQueue() *ReadyQueue {
	q := &ReadyQueue{list: pollfd.NewReadyList()}
	q.outputLimit.Store(defaultOutputLimit)
	return q
}

// member is what the queue's list holds for each value it watches: the
// value, and the output Write queued for it, made at its first write that
// would block. mu orders Write, flush and the output's state
// (readyqueue_write.go); out is set under it, and read without it by Add.
type member struct {
	p   Pollable
	fd  *poll.FD
	mu  sync.Mutex
	out atomic.Pointer[output]
}

// The errors of misuse. Each is a *net.OpError's Err.
var (
	errNoQueue        = errors.New("gatenet: ReadyQueue not made by NewReadyQueue")
	errWatchedByOther = errors.New("gatenet: already in another ReadyQueue (Remove it there first)")
)

// closedQueueError is the error of Add and Write on a closed queue:
// errors.Is(err, net.ErrClosed) holds, as for a closed conn, and for a
// File os.ErrClosed too, as for a closed File (closedQueue).
type closedQueueError struct{ file bool }

func (closedQueueError) Error() string { return "use of closed ReadyQueue" }

func (e closedQueueError) Is(target error) bool {
	return target == net.ErrClosed || e.file && target == os.ErrClosed
}

// closedQueue is the closed queue's error for p.
func closedQueue(p Pollable) error {
	_, file := p.(*File)
	return closedQueueError{file}
}

// closedMember is the error of a write to p once p is closing: what p's
// own methods report once it is closed.
func closedMember(p Pollable) error {
	if _, file := p.(*File); file {
		return os.ErrClosed
	}
	return net.ErrClosed
}

// opError wraps err as net does, with p's network and addresses where p
// has them (a conn: local and remote; a listener: its address).
func opError(op string, p Pollable, err error) error {
	e := &net.OpError{Op: op, Err: err}
	switch v := p.(type) {
	case net.Conn:
		if a := v.LocalAddr(); a != nil {
			e.Net, e.Source = a.Network(), a
		}
		e.Addr = v.RemoteAddr()
	case net.Listener:
		if a := v.Addr(); a != nil {
			e.Net, e.Addr = a.Network(), a
		}
	}
	return e
}

// descriptorOf returns p's descriptor for op, or the error of a nil or
// zero queue, a nil or zero p.
func (q *ReadyQueue) descriptorOf(op string, p Pollable) (*poll.FD, error) {
	if q == nil || q.list == nil {
		return nil, &net.OpError{Op: op, Err: errNoQueue}
	}
	if p == nil {
		return nil, &net.OpError{Op: op, Err: syscall.EINVAL}
	}
	fd := p.descriptor()
	if fd == nil {
		return nil, &net.OpError{Op: op, Err: syscall.EINVAL}
	}
	return fd, nil
}

// Add watches p, or re-arms it after a worker is done with it: if p is
// readable already, Next reports it at once. While more output than the
// limit waits to be sent (Write), Add leaves p unreported until it is;
// after a queued write failed, Add returns that error, and the worker
// closes p. Add fails on a closed queue (errors.Is(err, net.ErrClosed)), on
// a value another open queue watches, and on a regular file, which epoll
// cannot watch; it binds nothing then.
func (q *ReadyQueue) Add(p Pollable) error {
	fd, err := q.descriptorOf("add", p)
	if err != nil {
		return err
	}
	if q.closed.Load() {
		return opError("add", p, closedQueue(p))
	}
	m, _ := fd.WatchCookie(q.list).(*member)
	if m == nil {
		m = &member{p: p, fd: fd}
	} else if o := m.out.Load(); o != nil {
		return o.add(q, m)
	}
	return q.watch(m)
}

// watch arms m's read reports (poll.FD.Watch), and turns the poller's
// errors into Add's.
func (q *ReadyQueue) watch(m *member) error {
	err := m.fd.Watch(q.list, m)
	switch {
	case err == nil:
		if c, ok := m.p.(*UDPConn); ok && c.groOn() && c.heldReadable() {
			// Datagrams of a train are held, with no edge to come for
			// them (udpsock_gro.go): report the conn now.
			m.fd.NotifyReady()
		}
		return nil
	case errors.Is(err, pollfd.ErrListClosed):
		err = closedQueue(m.p)
	case errors.Is(err, pollfd.ErrWatchedElsewhere):
		err = errWatchedByOther
	case err == poll.ErrFileClosing:
		err = os.ErrClosed // a closed File: what its own methods report
	}
	return opError("add", m.p, err)
}

// Remove stops watching p, and drops the output Write queued for it; a p
// given to CloseWhenFlushed whose output still waits is closed. Closing p
// removes it too. A p that is not q's member is left as it is, in the
// queue that holds it, if any.
func (q *ReadyQueue) Remove(p Pollable) {
	fd, err := q.descriptorOf("remove", p)
	if err != nil {
		return
	}
	if m, _ := fd.WatchCookie(q.list).(*member); m != nil {
		q.remove(m)
	}
}

// Next waits for a watched connection to become readable (data, end of
// file, a hang-up or an error; a report may be stale, see ReadyQueue) and
// returns it (the value given to Add), or
// returns ctx's error (bare), or net.ErrClosed after Close. Concurrent
// calls each get a different report. A conn with queued output that
// became writable is not returned: Next sends its output (without
// blocking) and waits on.
//
// Workers that stop when the queue is closed pass context.Background():
// a Next whose context can never be done sleeps in the runtime's poller,
// and a report reaches it without waking another thread, which is the
// fastest hand-off the queue has. With a context that can be done, a
// report may cost a thread wake-up.
func (q *ReadyQueue) Next(ctx context.Context) (Pollable, error) {
	if q == nil || q.list == nil {
		return nil, &net.OpError{Op: "next", Err: errNoQueue}
	}
	ctx = orBackground(ctx)
	for {
		v, write, err := q.list.NextEvent(ctx)
		if err == pollfd.ErrListClosed {
			return nil, net.ErrClosed
		}
		if err != nil {
			return nil, err
		}
		m := v.(*member)
		if write {
			q.flush(m)
			continue
		}
		return m.p, nil
	}
}

// Len reports how many reports wait for Next.
func (q *ReadyQueue) Len() int {
	if q == nil || q.list == nil {
		return 0
	}
	return q.list.Len()
}

// Close wakes every Next with net.ErrClosed, and lets go of the members:
// they may be added to another queue, and the output Write kept for them
// is dropped. It closes only the members given to CloseWhenFlushed whose
// output still waited. Add, Write and CloseWhenFlushed fail on a closed
// queue (errors.Is(err, net.ErrClosed)).
func (q *ReadyQueue) Close() error {
	if q == nil || q.list == nil {
		return &net.OpError{Op: "close", Err: errNoQueue}
	}
	q.closed.Store(true)
	q.list.Close()
	for m := range q.kept.take() {
		m.drop()
	}
	for m := range q.closing.take() {
		m.p.Close()
	}
	q.held.take() // nothing is held any more: the outputs are dropped
	return nil
}
