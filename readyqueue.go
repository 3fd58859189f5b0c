//go:build linux

package gatenet

import (
	"context"
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// Pollable is a gatenet connection, listener or File: anything a
// ReadyQueue can watch.
type Pollable interface {
	Close() error
	descriptor() *descriptor
}

func (c *conn) descriptor() *descriptor {
	if !c.ok() {
		return nil
	}
	return &c.fd.pfd
}

func (l *TCPListener) descriptor() *descriptor {
	if !l.ok() {
		return nil
	}
	return &l.fd.pfd
}

func (l *UnixListener) descriptor() *descriptor {
	if !l.ok() {
		return nil
	}
	return &l.fd.pfd
}

func (f *File) descriptor() *descriptor {
	if f == nil {
		return nil
	}
	return f.fd
}

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

var errQueueUnpollable = errors.New("gatenet: a descriptor epoll refused cannot be watched")

// Add watches p, or re-arms it after a worker is done with it: if p is
// readable already, Next reports it at once.
func (q *ReadyQueue) Add(p Pollable) error {
	fd := p.descriptor()
	if fd == nil {
		return os.ErrInvalid
	}
	if err := fd.incref(); err != nil {
		return err
	}
	defer fd.decref()
	if fd.pd == nil {
		return errQueueUnpollable
	}
	if err := fd.pd.Watch(q.list, p); err != nil {
		return convertPollErr(err, fd.isFile)
	}
	// Readiness from before the Watch raised no edge: look now. Any edge
	// from here on is reported by the poller; NotifyReady is a no-op if
	// that already happened.
	if ready, err := pollNow(fd.sysfd, unix.POLLIN|unix.POLLRDHUP); err == nil && ready {
		fd.pd.NotifyReady()
	}
	return nil
}

// Remove stops watching p. Closing p removes it too.
func (q *ReadyQueue) Remove(p Pollable) {
	if fd := p.descriptor(); fd != nil && fd.pd != nil {
		fd.pd.Unwatch()
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
