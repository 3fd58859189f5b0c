//go:build linux

package poll

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// TestWatchProbesAfterAFilledTurn: Watch skips its ppoll(2) after a turn
// whose last read drained the socket, unless a read of the turn filled
// its buffer (a streaming conn, whose next bytes may have come since);
// a turn that ends with bytes left is probed as ever.
func TestWatchProbesAfterAFilledTurn(t *testing.T) {
	fd, peer := socketFD(t)
	l := pollfd.NewReadyList()
	defer l.Close()
	probes := 0
	probeReadable = func(fd int, events int16) (bool, error) {
		probes++
		return pollNow(fd, events)
	}
	t.Cleanup(func() { probeReadable = pollNow })

	done, cancel := context.WithCancel(context.Background())
	cancel()
	buf := make([]byte, 4)
	turn := func(sent string, reads ...int) int {
		t.Helper()
		if sent != "" {
			_, err := unix.Write(peer, []byte(sent))
			require.NoError(t, err)
		}
		for _, want := range reads {
			n, err := fd.ReadContext(done, buf)
			if want == 0 {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, want, n)
		}
		before := probes
		require.NoError(t, fd.Watch(l, "c"))
		return probes - before
	}

	assert.Equal(t, 1, turn(""), "the first Watch looks")
	assert.Equal(t, 0, turn("ab", 2), "one short read drained it")
	assert.Equal(t, 0, turn("", 0), "EAGAIN drained it")
	assert.Equal(t, 1, turn("abcdef", 4, 2), "a filled buffer, then a short read")
	assert.Equal(t, 1, turn("abcd", 4, 0), "a filled buffer, then EAGAIN")
	assert.Equal(t, 0, turn("xy", 2), "the record of a filled buffer ends at Watch")
	assert.Equal(t, 1, turn("abcdef", 4), "bytes left")
	fd.Unwatch()
}
