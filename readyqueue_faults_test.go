//go:build linux

package gatenet_test

// The ReadyQueue's members with faults attached (package faults): the
// worker loop that never parks (ExampleReadyQueue's) must still move
// every byte when the fault layer delays a read or a write, since a delay
// that ends must report the member again, as an edge would.

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestReadyQueueEchoUnderFaults: 64 KiB echoed by the queue's workers
// through a member with each delaying fault on its reads, then on its
// writes, arrives whole; before, a delayed write's kept output was never
// sent (the delay's end reached no worker), and a delayed read restarted
// its delay at each read that could not wait, so it never read.
func TestReadyQueueEchoUnderFaults(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	for _, dir := range []faults.Dir{faults.Read, faults.Write} {
		for _, f := range []faults.Fault{
			faults.Latency{Delay: 10 * time.Millisecond, Dir: dir},
			faults.Bandwidth{BytesPerSecond: 1 << 20, Dir: dir},
			faults.Stall{After: 2, For: 50 * time.Millisecond, Dir: dir},
			faults.Slicer{Min: 1000, Max: 2000, Delay: time.Millisecond, Dir: dir},
			faults.EAGAIN{P: 0.5, Dir: dir},
			faults.Wakeups{P: 0.5, Dir: dir},
		} {
			t.Run(fmt.Sprintf("%T/%v", f, dir), func(t *testing.T) {
				q := gatenet.NewReadyQueue()
				c, s := gatenetTCPPair(t)
				require.NoError(t, gatenet.InjectFaults(s, faults.New(1, f)))
				require.NoError(t, q.Add(s))
				workers := startEchoWorkers(q, 2, 4096)
				defer workers.Stop()
				want := bytes.Repeat([]byte("echoed by a queue under faults.."), 64<<10/32)
				go c.Write(want)
				require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
				got := make([]byte, len(want))
				n, err := io.ReadFull(c, got)
				require.NoError(t, err, "%d of %d bytes echoed; %d kept", n, len(want), q.Buffered(s))
				require.Equal(t, want, got)
			})
		}
	}
}
