//go:build linux

package pollfd_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestDescExtMedia: a descriptor that uses every part of its descExt at
// once (gate.go) — watched by a ReadyList, its reader parked in a park
// slot (RuntimePark), then in a select on a per-call context — keeps each
// medium's single token straight: the parked reader owns the edge its
// data brings (the list does not report it), a cancelled select leaves no
// token for the next park, the list reports an edge nobody waits for, and
// Unblock wakes a reader parked in a slot.
func TestDescExtMedia(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true})
	r, w := newPipe(t)
	d := open(t, p, r)
	l := pollfd.NewReadyList()
	defer l.Close()
	require.NoError(t, d.Watch(l, "r"))
	drain := func() {
		var b [16]byte
		_, err := unix.Read(r, b[:])
		require.NoError(t, err)
	}
	write := func() {
		_, err := unix.Write(w, []byte{1})
		require.NoError(t, err)
	}

	// A reader parked in a slot, woken by data; the edge is its own. A
	// scheduler busy with other tests lends no slot (slots.go): then the
	// park is woken and made again.
	var ch <-chan error
	var base pollfd.Stats
	for attempt := 0; ; attempt++ {
		ch, base = parkedRead(t, p, d)
		if p.Stats().ParksInSlot > base.ParksInSlot {
			break
		}
		require.Less(t, attempt, 100, "no park in a slot in 100 tries")
		write()
		require.NoError(t, recvErr(t, ch))
		drain()
		time.Sleep(time.Millisecond)
	}
	write()
	require.NoError(t, recvErr(t, ch))
	require.Zero(t, l.Len(), "a parked reader's edge is not reported")
	drain()

	// Per-call contexts select on the gate's wake channel; cancelled
	// ones leave nothing behind for the next wait.
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		ch, _ := parkedContext(t, p, d, ctx)
		cancel()
		require.ErrorIs(t, recvErr(t, ch), context.Canceled)
	}
	ch, base = parkedRead(t, p, d)
	requireParked(t, ch, 20*time.Millisecond, "no token was left by the cancelled selects")
	write()
	require.NoError(t, recvErr(t, ch))
	drain()

	// Nobody waits: the armed watch reports the edge.
	mustEAGAIN(t, d)
	d.Rearm()
	write()
	cookie, err := l.Next(context.Background())
	require.NoError(t, err)
	require.Equal(t, "r", cookie)
	drain()

	// Unblock wakes a reader parked in a slot, with ErrClosing.
	ch, base = parkedRead(t, p, d)
	d.Unblock()
	require.ErrorIs(t, recvErr(t, ch), pollfd.ErrClosing)
}
