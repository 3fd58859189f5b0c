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

func TestWaitContext(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		t.Run("Canceled", func(t *testing.T) {
			r, w := newPipe(t)
			d := open(t, p, r)
			ctx, cancel := context.WithCancel(context.Background())
			ch, _ := parked(t, p, d, func() error { return d.WaitContext(ctx, pollfd.ModeRead) })
			cancel()
			require.ErrorIs(t, recvErr(t, ch), context.Canceled)
			// The gate is clean: the next Wait parks until real data.
			mustEAGAIN(t, d)
			wch := goWait(d, pollfd.ModeRead)
			requireParked(t, wch, 30*time.Millisecond, "no data was written")
			_, err := unix.Write(w, []byte("x"))
			require.NoError(t, err)
			require.NoError(t, recvErr(t, wch))
		})
		t.Run("AlreadyDone", func(t *testing.T) {
			r, _ := newPipe(t)
			d := open(t, p, r)
			mustEAGAIN(t, d)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			base := p.Stats()
			require.ErrorIs(t, d.WaitContext(ctx, pollfd.ModeRead), context.Canceled)
			require.Equal(t, base.Parks, p.Stats().Parks, "a done context must not park")
		})
		t.Run("ErrorsFirst", func(t *testing.T) {
			r, _ := newPipe(t)
			d := open(t, p, r)
			mustEAGAIN(t, d)
			require.NoError(t, d.SetDeadline(past, pollfd.ModeRead))
			require.ErrorIs(t, d.WaitContext(context.Background(), pollfd.ModeRead), pollfd.ErrTimeout)
		})
		// Cancellation racing an event: whichever wins, no wake token is
		// left behind to wake a later Wait spuriously, and no edge is lost.
		t.Run("RaceWithEvent", func(t *testing.T) {
			testutil.Watchdog(t, patience*4)
			r, w := newPipe(t)
			d := open(t, p, r)
			var b [1]byte
			for i := 0; i < 500; i++ {
				mustEAGAIN(t, d)
				ctx, cancel := context.WithCancel(context.Background())
				ch := make(chan error, 1)
				go func() { ch <- d.WaitContext(ctx, pollfd.ModeRead) }()
				go cancel()
				_, err := unix.Write(w, []byte("y"))
				require.NoError(t, err)
				if err := recvErr(t, ch); err != nil {
					require.ErrorIs(t, err, context.Canceled)
				}
				// The byte is there, whoever won.
				n, err := unix.Read(r, b[:])
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			// And the gate still parks on an empty pipe, then wakes. An edge
			// for the last byte may be delivered after that byte was read
			// (a harmless spurious wake-up, as with the runtime's poller):
			// let it land before the Prepare that forgets it.
			time.Sleep(20 * time.Millisecond)
			mustEAGAIN(t, d)
			wch := goWait(d, pollfd.ModeRead)
			requireParked(t, wch, 30*time.Millisecond, "no data was written")
			_, err := unix.Write(w, []byte("z"))
			require.NoError(t, err)
			require.NoError(t, recvErr(t, wch))
		})
	})
}
