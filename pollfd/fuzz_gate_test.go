//go:build linux

package pollfd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// FuzzGate drives a Desc on a real non-blocking pipe (read direction) with
// a random sequence of Prepare, pipe writes, reads, SetDeadline, Wait and
// Unblock, next to a reference model of the gate, and fails on any
// divergence the protocol (gate.go) forbids, or on a Wait that hangs.
//
// The model tracks closing, expired and ready, where ready means "a write
// to the pipe happened since the last Prepare or consumed Wait". That is
// the protocol's notion of readiness, not "the pipe holds data" (and a
// read that empties the pipe clears it: epoll drops an uncollected edge
// whose file is no longer readable when it is harvested): Prepare
// forgets earlier edges because the caller's syscall comes next, so a Wait
// after Prepare with data left unread may legitimately park. The real gate
// can only be readier than the model (an edge delivered after a Prepare,
// or two writes coalesced into one event, leave a stale ready), so the
// model predicts a prompt return only where the real gate must give one.
//
// Input encoding: byte 0 selects the poller strategy; every later byte is
// one op: b%16 in 0-2 Prepare, 3-5 write a byte, 6-7 read everything,
// 8-10 SetDeadline (b>>4 %3: past, +1h, zero), 11-14 Wait, 15 Unblock.
func FuzzGate(f *testing.F) {
	f.Add([]byte{0, 3, 11, 0, 11})                     // write, Wait (edge), Prepare, Wait (parks, freed by a write)
	f.Add([]byte{1, 8, 0, 11, 0x18, 0, 11, 0x28, 11})  // past deadline, +1h, zero, Waits
	f.Add([]byte{2, 0, 3, 3, 6, 11, 15, 0, 11, 8})     // Unblock then everything fails with ErrClosing
	f.Add([]byte{3, 8, 15, 0, 11})                     // expired then closing: closing wins
	f.Add([]byte{4, 3, 0, 6, 11, 11, 3, 11, 0x1a, 11}) // stale edges, harvesting poller
	f.Add([]byte{0, 11, 11, 11, 3, 3, 3, 11, 11})

	strategies := testutil.Strategies()
	pollers := make([]*pollfd.Poller, len(strategies))
	for i, o := range strategies {
		pollers[i] = testutil.NewPoller(f, o)
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		if len(data) > 512 {
			data = data[:512] // keeps one input bounded
		}
		p := pollers[int(data[0])%len(pollers)]
		r, w := newPipe(t)
		d := open(t, p, r)
		var m gateModel
		var trace []string

		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%s\nops so far (%s): %v", fmt.Sprintf(format, args...), p.Options(), trace)
		}
		writeByte := func() {
			if _, err := unix.Write(w, []byte{'x'}); err != nil {
				fail("writing to the pipe: %v", err)
			}
		}
		// wait runs d.Wait in a goroutine bounded by a 2 s hang detector.
		wait := func(kick func()) error {
			ch := make(chan error, 1)
			go func() { ch <- d.Wait(pollfd.ModeRead) }()
			if kick != nil {
				kick()
			}
			select {
			case err := <-ch:
				return err
			case <-time.After(2 * time.Second):
				fail("Wait hung (model: %+v)", m)
				return nil
			}
		}

		for _, b := range data[1:] {
			switch op := b % 16; {
			case op <= 2:
				trace = append(trace, "Prepare")
				err := d.Prepare(pollfd.ModeRead)
				if want := m.err(); !errors.Is(err, want) || (want == nil && err != nil) {
					fail("Prepare = %v, model says %v (model %+v)", err, want, m)
				}
				if err == nil {
					m.ready = false
				}
			case op <= 5:
				trace = append(trace, "write")
				writeByte()
				m.ready = true
			case op <= 7:
				trace = append(trace, "read")
				var buf [256]byte
				for {
					_, err := unix.Read(r, buf[:])
					if errors.Is(err, unix.EAGAIN) {
						break
					}
					if err != nil {
						fail("reading the pipe: %v", err)
					}
				}
				// epoll re-polls a file when it reports an event: an edge
				// from a write not yet collected is dropped once the pipe
				// is empty again. The model cannot count on it any more.
				m.ready = false
			case op <= 10:
				var dl time.Time
				switch (b >> 4) % 3 {
				case 0:
					trace = append(trace, "SetDeadline(past)")
					dl = past
				case 1:
					trace = append(trace, "SetDeadline(+1h)")
					dl = time.Now().Add(time.Hour)
				default:
					trace = append(trace, "SetDeadline(zero)")
				}
				err := d.SetDeadline(dl, pollfd.ModeRead)
				if m.closing {
					if !errors.Is(err, pollfd.ErrClosing) {
						fail("SetDeadline on a closing Desc = %v, want ErrClosing", err)
					}
					break
				}
				if err != nil {
					fail("SetDeadline = %v", err)
				}
				m.expired = !dl.IsZero() && dl.Before(time.Now())
			case op <= 14:
				want := m.err()
				if want == nil && !m.ready {
					// The model would park: a write must wake it (or it
					// returned at once on a stale edge). Either way, nil.
					trace = append(trace, "Wait(kicked)")
					if err := wait(writeByte); err != nil {
						fail("Wait woken by a write = %v, want nil (model %+v)", err, m)
					}
					m.ready = false // the write's edge may or may not be left: the model is conservative
					break
				}
				trace = append(trace, "Wait")
				err := wait(nil)
				if want == nil {
					if err != nil {
						fail("Wait with an edge pending = %v, want nil (model %+v)", err, m)
					}
					m.ready = false
				} else if !errors.Is(err, want) {
					fail("Wait = %v, model says %v (model %+v)", err, want, m)
				}
			default:
				trace = append(trace, "Unblock")
				d.Unblock()
				m.closing = true
			}
		}
	})
}

// gateModel is the reference model of one gate (read direction) and the
// Desc's closing flag.
type gateModel struct {
	closing, expired, ready bool
}

// err is what Prepare (and Wait, before readiness) must return:
// closing beats an expired deadline.
func (m gateModel) err() error {
	switch {
	case m.closing:
		return pollfd.ErrClosing
	case m.expired:
		return pollfd.ErrTimeout
	}
	return nil
}
