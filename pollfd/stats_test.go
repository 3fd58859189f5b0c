//go:build linux

package pollfd_test

import (
	"context"
	"expvar"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

func TestStatsByCause(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)

		base := p.Stats()
		mustEAGAIN(t, d)
		ch := goWait(d, pollfd.ModeRead)
		waitParks(t, p, base, 1)
		_, err := unix.Write(w, []byte("x"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, ch))
		var b [1]byte
		unix.Read(r, b[:])
		require.Equal(t, base.WakeupsEvent+1, p.Stats().WakeupsEvent)

		base = p.Stats()
		mustEAGAIN(t, d)
		ch = goWait(d, pollfd.ModeRead)
		waitParks(t, p, base, 1)
		require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrTimeout)
		require.Equal(t, base.WakeupsDeadline+1, p.Stats().WakeupsDeadline)
		require.NoError(t, d.SetDeadline(time.Time{}, pollfd.ModeRead))

		base = p.Stats()
		mustEAGAIN(t, d)
		ctx, cancel := context.WithCancel(context.Background())
		cch := make(chan error, 1)
		go func() { cch <- d.WaitContext(ctx, pollfd.ModeRead) }()
		waitParks(t, p, base, 1)
		cancel()
		require.ErrorIs(t, recvErr(t, cch), context.Canceled)
		require.Equal(t, base.Canceled+1, p.Stats().Canceled)

		base = p.Stats()
		mustEAGAIN(t, d)
		ch = goWait(d, pollfd.ModeRead)
		waitParks(t, p, base, 1)
		d.Unblock()
		require.ErrorIs(t, recvErr(t, ch), pollfd.ErrClosing)
		st := p.Stats()
		require.Equal(t, base.WakeupsClose+1, st.WakeupsClose)
		require.Equal(t, st.WakeupsEvent+st.WakeupsDeadline+st.WakeupsClose, st.Wakeups)

		var sum uint64
		for _, n := range st.EventsPerWait {
			sum += n
		}
		require.Equal(t, st.EpollWaits, sum, "histogram counts every drain-loop return")
	})
}

var publishOnce sync.Once

func TestPublishExpvar(t *testing.T) {
	publishOnce.Do(func() { pollfd.PublishExpvar("gatenet_pollfd_test") })
	v := expvar.Get("gatenet_pollfd_test")
	require.NotNil(t, v)
	require.Contains(t, v.String(), `"Registered"`)
}

// TestStatsDrainDelivery: a wake-up the drain loop delivers is counted as
// the drain loop's (DrainEvents, DrainWakeups), with the time it took
// (DrainTime), on the Desc's own shard; the drain loops never deliver
// more than all deliverers together.
func TestStatsDrainDelivery(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		r, w := newPipe(t)
		d := open(t, p, r)
		base := p.ShardStats()[d.Shard()]
		ch, _ := parkedRead(t, p, d)
		_, err := unix.Write(w, []byte("x"))
		require.NoError(t, err)
		require.NoError(t, recvErr(t, ch))
		// Nothing else waits, so no harvest can take the edge; the drain
		// loop counts a batch after delivering it.
		waitUntil(t, "the drain loop to count its wake-up", func() bool {
			return p.ShardStats()[d.Shard()].DrainWakeups > base.DrainWakeups
		})
		st := p.ShardStats()[d.Shard()]
		require.Equal(t, base.DrainWakeups+1, st.DrainWakeups)
		require.Greater(t, st.DrainEvents, base.DrainEvents)
		require.Greater(t, st.DrainTime, base.DrainTime)
		total := p.Stats()
		require.LessOrEqual(t, total.DrainEvents, total.Events)
		require.LessOrEqual(t, total.DrainWakeups, total.WakeupsEvent)
	})
}
