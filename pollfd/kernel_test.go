//go:build linux

package pollfd_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// Kernel facts the design rests on (docs/DESIGN.md, "pollfd: the ten contracts"
// and "Regular files"): which descriptors epoll accepts, what a refusal
// looks like, and that EPOLL_CTL_ADD takes effect in an epoll_wait already
// in progress.

// TestOpenNotPollable: EPOLL_CTL_ADD refuses regular files and directories
// with EPERM (the fd layer's cue to fall back to blocking I/O), and a
// refused Open leaves nothing registered.
func TestOpenNotPollable(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "regular"))
		require.NoError(t, err)
		defer f.Close()
		dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(dfd)

		for _, c := range []struct {
			name string
			fd   int
		}{
			{"regular file", int(f.Fd())},
			{"directory", dfd},
		} {
			before := p.Stats().Registered
			d, err := p.Open(c.fd)
			require.Error(t, err, c.name)
			require.Nil(t, d, c.name)
			require.ErrorIs(t, err, unix.EPERM, c.name)
			var serr *os.SyscallError
			require.ErrorAs(t, err, &serr, c.name)
			require.Equal(t, "epoll_ctl", serr.Syscall, c.name)
			require.Equal(t, before, p.Stats().Registered, c.name)
		}
		require.Zero(t, p.Stats().Registered)
	})
}

// TestOpenPollable: pipes (both ends), FIFOs (both ends), socketpairs and
// eventfds are accepted, each counted in Registered until it is closed.
func TestOpenPollable(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		pr, pw := newPipe(t)
		sa, sb := newSocketpair(t)

		fifo := filepath.Join(t.TempDir(), "fifo")
		require.NoError(t, unix.Mkfifo(fifo, 0o600))
		// O_NONBLOCK: the read end opens without a writer, and then the
		// write end opens because a reader exists.
		fr, err := unix.Open(fifo, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fr)
		fw, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fw)

		efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		require.NoError(t, err)
		defer unix.Close(efd)

		fds := []struct {
			name string
			fd   int
		}{
			{"pipe read end", pr}, {"pipe write end", pw},
			{"fifo read end", fr}, {"fifo write end", fw},
			{"socketpair a", sa}, {"socketpair b", sb},
			{"eventfd", efd},
		}
		var descs []*pollfd.Desc
		for i, c := range fds {
			d, err := p.Open(c.fd)
			require.NoError(t, err, c.name)
			require.Equal(t, c.fd, d.Fd(), c.name)
			require.Same(t, p, d.Poller(), c.name)
			require.Equal(t, int64(i+1), p.Stats().Registered, c.name)
			descs = append(descs, d)
		}
		for i, d := range descs {
			d.Unblock()
			require.NoError(t, d.Close(), fds[i].name)
		}
		require.Zero(t, p.Stats().Registered)
	})
}

// TestOpenDuringWait: an EPOLL_CTL_ADD issued while the drain loop is
// already waiting (in epoll_wait(-1), or parked on the epoll fd in the
// runtime poller) takes effect in that wait: no wake-up of the drain loop
// is needed for a new registration.
func TestOpenDuringWait(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		ar, _ := newPipe(t)
		br, bw := newPipe(t)

		a := open(t, p, ar)
		mustEAGAIN(t, a)
		base := p.Stats()
		aDone := goWait(a, pollfd.ModeRead)
		// A's waiter has parked (and, with harvesting, harvested before
		// it did): the drain loop is the only thing left watching epoll.
		waitParks(t, p, base, 1)

		b := open(t, p, br)
		mustEAGAIN(t, b)
		base = p.Stats()
		_, err := unix.Write(bw, []byte{'b'})
		require.NoError(t, err)
		// Nobody calls Wait (so nobody harvests) until the drain loop has
		// delivered B's edge on its own.
		waitEvents(t, p, base, 1)
		require.NoError(t, b.Wait(pollfd.ModeRead))
		var buf [4]byte
		n, err := unix.Read(br, buf[:])
		require.NoError(t, err)
		require.Equal(t, "b", string(buf[:n]))
		require.Equal(t, base.Parks, p.Stats().Parks, "B's edge was ready: its Wait must not park")

		a.Unblock()
		require.ErrorIs(t, recvErr(t, aDone), pollfd.ErrClosing)
	})
}

// TestOpenBadFd: Open of -1, of a closed descriptor, or of a number no
// descriptor can have (beyond int32, which a Desc keeps) reports EBADF,
// does not panic and registers nothing.
func TestOpenBadFd(t *testing.T) {
	eachStrategy(t, func(t *testing.T, p *pollfd.Poller) {
		var fds [2]int
		require.NoError(t, unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
		require.NoError(t, unix.Close(fds[0]))
		require.NoError(t, unix.Close(fds[1]))

		for _, fd := range []int{-1, fds[0], 1 << 20, math.MaxInt32 + 1, math.MinInt64} {
			before := p.Stats().Registered
			var d *pollfd.Desc
			var err error
			require.NotPanics(t, func() { d, err = p.Open(fd) }, "fd %d", fd)
			require.Nil(t, d)
			require.ErrorIs(t, err, unix.EBADF, "fd %d", fd)
			require.Equal(t, before, p.Stats().Registered)
		}
	})
}

// TestOpenAfterPollerClose: a closed poller refuses new registrations, and
// a second Close reports os.ErrClosed.
func TestOpenAfterPollerClose(t *testing.T) {
	for _, o := range testutil.Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			p, err := pollfd.New(o)
			require.NoError(t, err)
			require.Equal(t, o, p.Options())
			require.NoError(t, p.Close())
			r, _ := newPipe(t)
			d, err := p.Open(r)
			require.Nil(t, d)
			require.ErrorIs(t, err, os.ErrClosed)
			require.ErrorIs(t, p.Close(), os.ErrClosed)
		})
	}
}

// TestIsPollDescriptor (contract 10): exactly the descriptors a poller opens
// for itself are its poll descriptors, while it is open; a descriptor it
// merely has registered is not.
func TestIsPollDescriptor(t *testing.T) {
	// Make sure the runtime's own poller exists, so that New's descriptors
	// are the only ones that appear below.
	or, ow, err := os.Pipe()
	require.NoError(t, err)
	or.Close()
	ow.Close()

	for _, o := range testutil.Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			before := fdSet(t)
			p := testutil.NewPoller(t, o)
			var own []int
			for fd := range fdSet(t) {
				if !before[fd] {
					own = append(own, fd)
				}
			}
			require.NotEmpty(t, own)
			for _, fd := range own {
				require.True(t, p.IsPollDescriptor(fd), "fd %d opened by New(%v)", fd, o)
				require.True(t, pollfd.IsPollDescriptor(fd), "fd %d opened by New(%v)", fd, o)
			}
			for fd := range before {
				require.False(t, p.IsPollDescriptor(fd), "fd %d predates the poller", fd)
			}
			require.False(t, p.IsPollDescriptor(-1))

			r, _ := newPipe(t)
			open(t, p, r)
			require.False(t, p.IsPollDescriptor(r), "a registered descriptor is not the poller's own")
			require.False(t, pollfd.IsPollDescriptor(r))
			t.Logf("poller descriptors: %v", own)
		})
	}
}

// fdSet lists the process's open descriptors (less the one that listing
// them used, closed by the time ReadDir returns).
func fdSet(t testing.TB) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	set := make(map[int]bool, len(ents))
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		require.NoError(t, err)
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
			set[fd] = true
		}
	}
	return set
}
