//go:build linux

package poll

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// socketFD is one end of a non-blocking socket pair as an FD of the
// default poller; the other end is returned as a raw descriptor.
func socketFD(t *testing.T) (*FD, int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	fd := new(FD)
	require.NoError(t, fd.InitSocket(fds[0], unix.SOCK_STREAM, pollfd.Default(), AnyShard))
	t.Cleanup(func() {
		fd.Close()
		unix.Close(fds[1])
	})
	return fd, fds[1]
}

// watchedFD is socketFD's descriptor, watched by a ReadyList.
func watchedFD(t *testing.T) (*FD, int) {
	t.Helper()
	fd, peer := socketFD(t)
	l := pollfd.NewReadyList()
	t.Cleanup(l.Close)
	require.NoError(t, fd.Watch(l, nil))
	return fd, peer
}

func TestRawIOOnlyWhilePrivate(t *testing.T) {
	t.Run("not marked", func(t *testing.T) {
		fd, _ := watchedFD(t)
		assert.False(t, fd.rawIO(1))
	})
	t.Run("marked, not watched", func(t *testing.T) {
		fd, _ := socketFD(t)
		fd.MarkPrivate()
		assert.True(t, fd.Private())
		assert.False(t, fd.rawIO(1), "a conn used the blocking way keeps Syscall")
	})
	t.Run("marked and watched", func(t *testing.T) {
		fd, _ := watchedFD(t)
		fd.MarkPrivate()
		assert.True(t, fd.rawIO(0))
		assert.True(t, fd.rawIO(rawIOMax))
		assert.False(t, fd.rawIO(rawIOMax+1), "a call moving more than rawIOMax gives up its P")
		fd.Unwatch()
		assert.False(t, fd.rawIO(1), "unwatched")
	})
	for name, handOut := range map[string]func(*FD) error{
		"Dup": func(fd *FD) error {
			nfd, _, err := fd.Dup()
			if err == nil {
				unix.Close(nfd)
			}
			return err
		},
		"RawControl":  func(fd *FD) error { return fd.RawControl(func(uintptr) {}) },
		"RawRead":     func(fd *FD) error { return fd.RawRead(func(uintptr) bool { return true }) },
		"RawWrite":    func(fd *FD) error { return fd.RawWrite(func(uintptr) bool { return true }) },
		"SetBlocking": func(fd *FD) error { return fd.SetBlocking() },
	} {
		t.Run(name, func(t *testing.T) {
			fd, _ := watchedFD(t)
			fd.MarkPrivate()
			require.NoError(t, handOut(fd))
			assert.False(t, fd.Private())
			assert.False(t, fd.rawIO(1))
		})
	}
	t.Run("blocking file", func(t *testing.T) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fds[1])
		fd := NewBlockingFile(fds[0])
		defer fd.Close()
		fd.MarkPrivate()
		assert.False(t, fd.rawIO(1), "an unregistered descriptor is never private")
	})
}

// TestRawIOMovesBytes: the raw and the scheduler-aware calls read, write
// and report EAGAIN and EOF alike.
func TestRawIOMovesBytes(t *testing.T) {
	for _, private := range []bool{false, true} {
		fd, peer := watchedFD(t)
		if private {
			fd.MarkPrivate()
		}
		require.Equal(t, private, fd.rawIO(8))
		buf := make([]byte, 8)
		n, err := fd.read(buf)
		assert.Equal(t, -1, n)
		assert.Equal(t, unix.EAGAIN, err)
		n, err = fd.write([]byte("ping"))
		require.NoError(t, err)
		assert.Equal(t, 4, n)
		n, err = unix.Read(peer, buf)
		require.NoError(t, err)
		assert.Equal(t, "ping", string(buf[:n]))
		iov := []unix.Iovec{{Base: &[]byte("ab")[0]}, {Base: &[]byte("cd")[0]}}
		iov[0].SetLen(2)
		iov[1].SetLen(2)
		n, err = fd.writev(iov)
		require.NoError(t, err)
		assert.Equal(t, 4, n)
		n, err = unix.Read(peer, buf)
		require.NoError(t, err)
		assert.Equal(t, "abcd", string(buf[:n]))
		_, err = unix.Write(peer, []byte("pong"))
		require.NoError(t, err)
		n, err = fd.read(buf)
		require.NoError(t, err)
		assert.Equal(t, "pong", string(buf[:n]))
		require.NoError(t, unix.Shutdown(peer, unix.SHUT_WR))
		n, err = fd.read(buf)
		assert.NoError(t, err)
		assert.Zero(t, n, "EOF")
	}
}
