//go:build linux

package gatenet

import (
	"context"
	"net"
	"os"

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
// closes the connection then, and does not Add it again.
//
// A connection is not reported again while it is being read: it becomes
// eligible again when a Read on it hits "would block" and parks (so the
// worker may read until then, bounding the last Read with a deadline or
// ReadContext), or when the worker hands it back with Add without reading
// that far. A worker that must not park on an idle connection reads
// without blocking — ReadContext (ContextIO) with a context already done
// returns what is there, or io.EOF, or the context's error if nothing is —
// again while its reads fill the buffer (a bounded number of times, so
// that a connection that never runs dry does not keep its worker), and
// then hands it back with Add, which reports it again at once if more is
// readable. ExampleReadyQueue is that loop. A connection that closes leaves the queue (Close is how a
// worker drops one; Remove stops watching it without closing it).
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
// A ReadyQueue made in a testing/synctest bubble sleeps durably in Next
// (its context's timeout fires on the fake clock) while every member
// parks durably there; a member whose peer is not the bubble's keeps Next
// on the real clock, where a context deadline set in the bubble ends it.
type ReadyQueue struct {
	list *pollfd.ReadyList
}

// NewReadyQueue returns an empty queue.
func NewReadyQueue() *ReadyQueue { return &ReadyQueue{list: pollfd.NewReadyList()} }

// Add watches p, or re-arms it after a worker is done with it: if p is
// readable already, Next reports it at once. A descriptor epoll refused (a
// regular file) cannot be watched.
func (q *ReadyQueue) Add(p Pollable) error {
	fd := p.descriptor()
	if fd == nil {
		return os.ErrInvalid
	}
	return fd.Watch(q.list, p)
}

// Remove stops watching p. Closing p removes it too.
func (q *ReadyQueue) Remove(p Pollable) {
	if fd := p.descriptor(); fd != nil {
		fd.Unwatch()
	}
}

// Next waits for a watched connection to become readable (data, end of
// file, a hang-up or an error) and returns it (the value given to Add), or
// returns ctx's error (bare), or net.ErrClosed after Close. Concurrent
// calls each get a different report.
//
// Workers that stop when the queue is closed pass context.Background():
// a Next whose context can never be done sleeps in the runtime's poller,
// and a report reaches it without waking another thread, which is the
// fastest hand-off the queue has. With a context that can be done, a
// report may cost a thread wake-up.
func (q *ReadyQueue) Next(ctx context.Context) (Pollable, error) {
	v, err := q.list.Next(orBackground(ctx))
	if err == pollfd.ErrListClosed {
		return nil, net.ErrClosed
	}
	if err != nil {
		return nil, err
	}
	return v.(Pollable), nil
}

// Len reports how many readable connections wait for Next.
func (q *ReadyQueue) Len() int { return q.list.Len() }

// Close wakes every Next with net.ErrClosed. It does not close the
// connections.
func (q *ReadyQueue) Close() error {
	q.list.Close()
	return nil
}
