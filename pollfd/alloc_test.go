//go:build linux

package pollfd_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// TestWakePathAllocs: a full read cycle that parks and is woken by an epoll
// event (Prepare, read → EAGAIN, Wait parks, the event wakes it, read)
// allocates nothing. testing.AllocsPerRun counts every allocation in the
// process, so the helper that writes the byte (a goroutine started once,
// driven by a channel, writing from a fixed buffer) and the drain loop must
// allocate nothing either: the figure covers the whole wake path.
func TestWakePathAllocs(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)

		kick := kicker(t, w)

		var (
			buf    [8]byte
			failed error // first failure; no require inside the measured loop
		)
		fail := func(err error) {
			if failed == nil {
				failed = err
			}
		}
		base := p.Stats()
		cycles := 0
		allocs := testing.AllocsPerRun(200, func() {
			cycles++
			if err := d.Prepare(pollfd.ModeRead); err != nil {
				fail(err)
				return
			}
			if _, err := unix.Read(r, buf[:]); err != unix.EAGAIN {
				fail(errors.New("read before the write did not return EAGAIN"))
				return
			}
			kick <- struct{}{}
			if err := d.Wait(pollfd.ModeRead); err != nil {
				fail(err)
				return
			}
			if n, err := unix.Read(r, buf[:]); n != 1 || err != nil {
				fail(errors.New("read after Wait did not return the byte"))
			}
		})
		require.NoError(t, failed)
		s := p.Stats()
		t.Logf("%d cycles: %d parks, %d events, %d harvests", cycles, s.Parks-base.Parks, s.Events-base.Events, s.Harvests-base.Harvests)
		require.Positive(t, s.Parks-base.Parks, "the measured path never parked")
		if p.Options().RuntimePark {
			require.Positive(t, s.ParksInSlot-base.ParksInSlot, "RuntimePark never parked in a slot")
		}
		require.Zero(t, allocs, "allocations per wake cycle")
	})
}

// TestSetDeadlineAllocs: once a gate has its timer, re-arming it (net/http
// sets a deadline per request) allocates nothing, nor does clearing it.
func TestSetDeadlineAllocs(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, _ := newPipe(t)
		d := open(t, p, r)
		for _, mode := range []pollfd.Mode{pollfd.ModeRead, pollfd.ModeWrite, pollfd.ModeReadWrite} {
			var failed error
			i := 0
			// AllocsPerRun's warm-up call creates the timer(s).
			allocs := testing.AllocsPerRun(1000, func() {
				i++
				dl := time.Now().Add(time.Hour + time.Duration(i)*time.Microsecond)
				if err := d.SetDeadline(dl, mode); err != nil && failed == nil {
					failed = err
				}
			})
			require.NoError(t, failed)
			require.Zero(t, allocs, "allocations per SetDeadline(future, %v)", mode)

			allocs = testing.AllocsPerRun(1000, func() {
				d.SetDeadline(time.Now().Add(time.Hour), mode)
				d.SetDeadline(time.Time{}, mode)
			})
			require.Zero(t, allocs, "allocations per set-and-clear (%v)", mode)
			require.NoError(t, d.Prepare(pollfd.ModeRead), fmt.Sprint(mode))
		}
		require.Zero(t, p.Stats().TimerFires)
	})
}
