//go:build linux

package pollfd_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

func TestSmoke(t *testing.T) {
	for _, o := range testutil.Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			p := testutil.NewPoller(t, o)
			var fds [2]int
			require.NoError(t, unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK))
			defer unix.Close(fds[0])
			defer unix.Close(fds[1])
			d, err := p.Open(fds[0])
			require.NoError(t, err)
			require.NoError(t, d.Prepare(pollfd.ModeRead))
			buf := make([]byte, 10)
			_, err = unix.Read(fds[0], buf)
			require.Equal(t, unix.EAGAIN, err)
			go func() { time.Sleep(20 * time.Millisecond); unix.Write(fds[1], []byte("hi")) }()
			require.NoError(t, d.Wait(pollfd.ModeRead))
			n, err := unix.Read(fds[0], buf)
			require.NoError(t, err)
			require.Equal(t, 2, n)
			require.NoError(t, d.SetDeadline(time.Now().Add(30*time.Millisecond), pollfd.ModeRead))
			require.NoError(t, d.Prepare(pollfd.ModeRead))
			require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrTimeout)
			d.Unblock()
			require.NoError(t, d.Close())
			t.Logf("%+v", p.Stats())
		})
	}
}
