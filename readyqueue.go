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
// per edge of readiness; the caller (typically a worker) then uses the
// ordinary Read with its deadlines.
//
// A connection is not reported again while it is being read: it becomes
// eligible again when a Read on it hits "would block" and parks (so the
// worker may read until then, bounding the last Read with a deadline or
// ReadContext), or when the worker hands it back with Add without reading
// that far. A connection that closes leaves the queue.
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

// Next waits for a watched connection to become readable and returns it
// (the value given to Add), or returns ctx's error, or net.ErrClosed after
// Close.
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
