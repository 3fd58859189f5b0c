//go:build linux

package gatenet

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/gatenet/gatenet/internal/poll"
)

// Output a ReadyQueue holds for its members: the write side of event mode.
// A worker writes with q.Write, which never parks; what the socket does
// not take waits in the member's output, and the queue asks the poller for
// the member's next write edge (pollfd.Desc.WatchWrite). Next, when that
// edge is its next report, sends the output itself (flush) and waits on,
// so no goroutine waits per conn and every worker stays free. Past the
// output limit the member's read reports are held until its output is
// all sent: a peer that does not read stops being read, and costs the
// server the limit, plus what one worker's turn wrote past it.
//
// A flush never arms a member a worker still holds (between Next and
// Add): reads stay the worker's until it hands the member back, so a hold
// that ends mid-turn only lifts itself (ReleaseReads) and leaves the
// arming to that Add; back records an Add the hold deferred, which the
// flush then completes.
//
// The member's mu orders its writes: Write and flush hold it across their
// system call, from the first Write on, so one Write's bytes are never cut
// by another's, bytes leave in the order Write took them, and a Write
// while output waits appends to it rather than overtaking it.
//
// The queue owns a conn given to CloseWhenFlushed: if the queue cannot
// send its output any more (Close, Remove), it closes the conn at once,
// dropping what waits, as a send that fails does. Until then the queue
// keeps such members in closing. It lists one other set, held: the
// members whose reads a Write held past the limit, which a raised limit
// releases at once (SetOutputLimit). Members are added to a set under
// their mu; a walk of a set takes each member's mu after the set's, so
// no lock is held in both orders.

// noWait is a context already done: a write with it sends what the socket
// takes now and returns the count with context.Canceled instead of
// parking.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// output is a member's queued output, under the member's mu.
type output struct {
	buf     []byte // not yet sent, in order
	held    bool   // read reports held: buf went past the limit, or closing
	back    bool   // Add came while held: the flush that ends the hold re-arms reads
	closing bool   // CloseWhenFlushed: close once buf is sent
	dropped bool   // the queue's Close dropped buf
	err     error  // a send of buf failed: Write and Add return it
}

// Errors of Write's misuse, each a *net.OpError's Err.
var (
	errNotMember = errors.New("gatenet: not in this ReadyQueue (Add it first)")
	errNotStream = errors.New("gatenet: ReadyQueue.Write needs a byte stream (a stream socket or a pipe)")
)

// Write writes b to p, a member of q, without ever parking: it sends what
// p's socket takes now, keeps the rest, and sends it, in order and before
// anything written later, as p becomes writable (a Next does, in its
// caller's goroutine, and does not return p for it). It returns len(b)
// and nil once b is sent or kept; the error of the write that failed
// otherwise, or, after a kept send failed, that error, which Add then
// returns too. While more than the output limit waits, p is not reported
// readable. p must be a stream (a TCP or Unix stream conn, a pipe) that q
// watches; closing or removing p, or closing q, drops what waits. Writes
// from many goroutines at once each go out whole, one after the other,
// as net.Conn's do. On a closed q, or a closed p, Write fails with an
// error for which errors.Is(err, net.ErrClosed) holds (os.ErrClosed for a
// File).
//
// Write p through q only, not also through p's own Write while output
// waits: that one does not queue behind q's output, so the two may
// interleave their bytes (both are sent; neither waits for good).
//
// A write deadline set on p (SetWriteDeadline) bounds the output too:
// once it passes with output waiting, a Next drops that output as a send
// that failed, with the deadline's error (errors.Is(err,
// os.ErrDeadlineExceeded)), which Write and Add then return; a p given
// to CloseWhenFlushed is closed. That is how a server bounds a peer that
// stops reading.
func (q *ReadyQueue) Write(p Pollable, b []byte) (int, error) {
	fd, err := q.descriptorOf("write", p)
	if err != nil {
		return 0, err
	}
	w, ok := p.(ContextIO)
	if !ok || !fd.IsStream() {
		return 0, opError("write", p, errNotStream)
	}
	if q.closed.Load() {
		return 0, opError("write", p, closedQueue(p))
	}
	m, _ := fd.WatchCookie(q.list).(*member)
	if m == nil {
		if fd.Incref() != nil {
			// p is closed, which is why q does not watch it: p's own
			// write says so, in p's shape (a *net.OpError, or a File's
			// *fs.PathError).
			if _, err := w.WriteContext(noWait, nil); err != nil {
				return 0, err
			}
		} else {
			fd.Decref()
		}
		if fd.Desc() == nil { // a regular file: Add can never take it
			return 0, opError("write", p, poll.ErrUnwatchable)
		}
		return 0, opError("write", p, errNotMember)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.out.Load()
	if o == nil {
		n, err := w.WriteContext(noWait, b)
		if err == nil || !errors.Is(err, context.Canceled) {
			return n, err
		}
		o = new(output)
		m.out.Store(o)
		return q.keep(m, o, b, n)
	}
	if o.err != nil {
		return 0, o.err
	}
	if o.closing {
		return 0, opError("write", p, closedMember(p))
	}
	if len(o.buf) > 0 {
		return q.keep(m, o, b, 0)
	}
	n, err := w.WriteContext(noWait, b)
	if err == nil || !errors.Is(err, context.Canceled) {
		return n, err
	}
	return q.keep(m, o, b, n)
}

// keep appends b[sent:] to m's output and asks for m's next write edge,
// holding its read reports if the output is past the limit, and returns
// Write's result. Called with m.mu held.
func (q *ReadyQueue) keep(m *member, o *output, b []byte, sent int) (int, error) {
	if len(o.buf) == 0 && !q.kept.add(q, m) { // q closed meanwhile: nothing would send it
		return sent, opError("write", m.p, closedQueue(m.p))
	}
	o.buf = append(o.buf, b[sent:]...)
	if !o.held && len(o.buf) > int(q.outputLimit.Load()) {
		o.held = true
		q.held.add(q, m) // fails only on a closed q, whose Write failed already
	}
	if err := m.fd.WatchWrite(q.list, o.held); err != nil {
		o.buf = nil
		q.kept.forget(m)
		return sent, opError("write", m.p, err)
	}
	return len(b), nil
}

// add is Add for a member that has had output: while its reads are held
// Add leaves them held; after a failed send it returns that error.
func (o *output) add(q *ReadyQueue, m *member) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.held {
		o.back = true
		return nil
	}
	return q.watch(m)
}

// flush sends m's output as far as the socket takes it, for a Next that
// was told m is writable. Sent in full, the output's memory goes back and
// a hold of its reads ends (release); cut short, it waits for the next edge;
// failed, the error is kept for Write and Add, and m is armed so that a
// worker hears of it.
func (q *ReadyQueue) flush(m *member) {
	o := m.out.Load()
	if o == nil {
		return
	}
	m.mu.Lock()
	if len(o.buf) == 0 || o.err != nil {
		m.mu.Unlock()
		return
	}
	n, err := m.p.(ContextIO).WriteContext(noWait, o.buf)
	o.buf = o.buf[n:]
	closing := o.closing && (err == nil || !errors.Is(err, context.Canceled))
	switch {
	case closing:
		o.buf, o.err = nil, opError("write", m.p, closedMember(m.p))
		q.held.forget(m)
	case err == nil:
		o.buf = nil
		q.release(m, o)
	case errors.Is(err, context.Canceled):
		_ = m.fd.WatchWrite(q.list, false) // fails only once m is closed or removed
	default:
		o.buf, o.err = nil, err
		q.release(m, o)
		m.fd.NotifyReady() // unless a worker holds it: its read, Write or Add says it
	}
	if o.buf == nil {
		q.kept.forget(m)
	}
	m.mu.Unlock()
	if closing {
		q.closing.forget(m)
		m.p.Close()
	}
}

// release ends a hold of m's reads, if any: an Add that came while it
// held arms them (Watch); otherwise they are as the hold found them, armed
// or the holding worker's (ReleaseReads). Called with m.mu held.
func (q *ReadyQueue) release(m *member, o *output) {
	if o.held {
		q.held.forget(m)
	}
	switch {
	case o.back:
		o.held, o.back = false, false
		_ = q.watch(m) // an error here is the conn's: its next read says it
	case o.held:
		o.held = false
		m.fd.ReleaseReads()
	}
}

// CloseWhenFlushed closes p once the output Write kept for it is sent (at
// once if none waits), and holds its read reports meanwhile: how a worker
// ends a conn whose peer is done (io.EOF) while its last reply may still
// wait. A send that fails closes p too, and so do Close and Remove, which
// drop what waits. Until then p stays in q; a Write to it fails. On a
// closed queue, or one not made by NewReadyQueue, it closes p at once and
// returns an error if output was dropped or the queue is not one.
func (q *ReadyQueue) CloseWhenFlushed(p Pollable) error {
	fd, err := q.descriptorOf("close", p)
	if err != nil {
		if p != nil && p.descriptor() != nil {
			p.Close() // the promise holds for p, whatever the queue
		}
		return err
	}
	m, _ := fd.WatchCookie(q.list).(*member)
	if m == nil {
		return p.Close()
	}
	o := m.out.Load()
	if o == nil {
		return p.Close()
	}
	m.mu.Lock()
	if o.dropped {
		m.mu.Unlock()
		p.Close()
		return opError("close", p, closedQueue(p))
	}
	if len(o.buf) == 0 || o.err != nil {
		m.mu.Unlock()
		return p.Close()
	}
	if !q.closing.add(q, m) { // q is closed: nothing will send it
		m.mu.Unlock()
		p.Close()
		return opError("close", p, closedQueue(p))
	}
	o.closing, o.held = true, true
	err = m.fd.WatchWrite(q.list, true)
	m.mu.Unlock()
	if err != nil {
		q.closing.forget(m)
		return p.Close()
	}
	return nil
}

// memberSet is a set of members the queue must find again: those given
// to CloseWhenFlushed whose output still waits (closing), which Close
// closes; those whose reads are held (held), which a raised limit
// releases; and those whose output waits (kept), whose output Close
// drops.
type memberSet struct {
	mu      sync.Mutex
	members map[*member]struct{}
	shut    bool // Close took the members: add refuses
	sweepAt int  // add looks for members closed or removed meanwhile past this size
}

// add records m, unless Close came first. It also forgets members whose
// watch ended without a flush (their conn was closed, or moved), so that
// the set holds only members still watched.
func (s *memberSet) add(q *ReadyQueue, m *member) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shut {
		return false
	}
	if s.members == nil {
		s.members = make(map[*member]struct{})
	}
	if len(s.members) >= s.sweepAt {
		for c := range s.members {
			if c.fd.WatchCookie(q.list) != any(c) {
				delete(s.members, c)
			}
		}
		s.sweepAt = 2*len(s.members) + 16
	}
	s.members[m] = struct{}{}
	return true
}

// forget drops m: its output is sent, its hold ended, or it is closed.
func (s *memberSet) forget(m *member) {
	s.mu.Lock()
	delete(s.members, m)
	s.mu.Unlock()
}

// list returns the members now in the set.
func (s *memberSet) list() []*member {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.members))
}

// take returns the members, for Close, and refuses every later add.
func (s *memberSet) take() map[*member]struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shut = true
	ms := s.members
	s.members = nil
	return ms
}

// drop is the queue's Close for a member whose output waits: the output
// goes, and the queue's closed list no longer refers to its memory.
func (m *member) drop() {
	m.mu.Lock()
	if o := m.out.Load(); o != nil && len(o.buf) > 0 {
		o.buf, o.dropped = nil, true
	}
	m.mu.Unlock()
}

// remove is Remove for a member. Under m.mu, so that a flush under way,
// which holds it across its send and may watch m again when it ends a
// hold (release), is over first: it drops the output and unwatches m. A
// member given to CloseWhenFlushed whose output still waited is closed.
func (q *ReadyQueue) remove(m *member) {
	m.mu.Lock()
	closing := false
	if o := m.out.Load(); o != nil {
		closing = o.closing && len(o.buf) > 0
		if o.held {
			q.held.forget(m)
		}
		o.buf, o.held, o.back = nil, false, false
	}
	m.fd.Unwatch()
	m.mu.Unlock()
	q.kept.forget(m)
	if closing {
		q.closing.forget(m)
		m.p.Close()
	}
}

// Buffered reports how many bytes Write kept for p that are not sent yet.
func (q *ReadyQueue) Buffered(p Pollable) int {
	fd, err := q.descriptorOf("buffered", p)
	if err != nil {
		return 0
	}
	m, _ := fd.WatchCookie(q.list).(*member)
	if m == nil {
		return 0
	}
	o := m.out.Load()
	if o == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(o.buf)
}

// SetOutputLimit sets how many bytes Write may keep for one member before
// the queue stops reporting it readable (256 KiB for a new queue). A
// limit of 0 holds a member's reads as soon as any output waits. A raised
// limit releases at once every held member whose output is now within
// it; a lowered one holds a member from its next Write.
func (q *ReadyQueue) SetOutputLimit(n int) error {
	if q == nil || q.list == nil {
		return &net.OpError{Op: "set", Err: errNoQueue}
	}
	if n < 0 {
		return &net.OpError{Op: "set", Err: errors.New("gatenet: negative output limit")}
	}
	if old := q.outputLimit.Swap(int64(n)); int64(n) > old {
		for _, m := range q.held.list() {
			m.mu.Lock()
			if o := m.out.Load(); o != nil && o.held && !o.closing && len(o.buf) <= n {
				q.release(m, o)
			}
			m.mu.Unlock()
		}
	}
	return nil
}
