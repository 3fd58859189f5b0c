//go:build linux

package gatenet

import (
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSocknameMatchesXSys: getsockname, getpeername and accept4 (below:
// a listener's accept) return what x/sys/unix's Getsockname, Getpeername
// and Accept4 return, for every family gatenet makes sockets of, bound,
// connected, abstract and unnamed.
func TestSocknameMatchesXSys(t *testing.T) {
	type listenerCase struct{ network, addr string }
	cases := []listenerCase{
		{"tcp4", "127.0.0.1:0"},
		{"tcp6", "[::1]:0"},
		{"unix", filepath.Join(t.TempDir(), "s")},
		{"unix", "@gatenet-sockname-test"},
	}
	for _, c := range cases {
		t.Run(c.network+" "+c.addr, func(t *testing.T) {
			ln, err := net.Listen(c.network, c.addr)
			if c.network == "tcp6" && err != nil {
				t.Skipf("no IPv6 loopback: %v", err)
			}
			require.NoError(t, err)
			defer ln.Close()
			lfd := sysfd(t, ln)
			compareNames(t, lfd)

			client, err := net.Dial(c.network, ln.Addr().String())
			require.NoError(t, err)
			defer client.Close()
			compareNames(t, sysfd(t, client))

			// Two accepts of two connections: one with x/sys, one with ours.
			client2, err := net.Dial(c.network, ln.Addr().String())
			require.NoError(t, err)
			defer client2.Close()
			waitReadable(t, lfd)
			s1, sa1, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
			require.NoError(t, err)
			defer unix.Close(s1)
			waitReadable(t, lfd)
			s2, sa2, err := accept4(lfd, unix.SOCK_CLOEXEC)
			require.NoError(t, err)
			defer unix.Close(s2)
			if c.network == "unix" {
				require.Equal(t, sa1, sa2) // both clients unnamed
			} else {
				require.IsType(t, sa1, sa2)
			}
			peer2, err := unix.Getpeername(s2)
			require.NoError(t, err)
			require.Equal(t, peer2, sa2, "accept4's address is the peer's")
			compareNames(t, s2)
		})
	}
	t.Run("socketpair", func(t *testing.T) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fds[0])
		defer unix.Close(fds[1])
		compareNames(t, fds[0])
	})
	t.Run("errors", func(t *testing.T) {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		_, want := unix.Getpeername(fd)
		_, got := getpeername(fd)
		require.Equal(t, want, got) // ENOTCONN
		_, _, want = unix.Accept4(fd, 0)
		_, _, got = accept4(fd, 0)
		require.Equal(t, want, got) // EINVAL: not listening
		_, got = getsockname(-1)
		require.ErrorIs(t, got, unix.EBADF)
	})
}

// accept4 is what a listener's accept does: accept4(2), as
// internal/poll's FD.Accept makes it, then acceptedSockaddr.
func accept4(s, flags int) (int, unix.Sockaddr, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(s), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)), uintptr(flags), 0, 0)
	if e != 0 {
		return -1, nil, e
	}
	sa, err := acceptedSockaddr(int(r), &rsa)
	if err != nil {
		return -1, nil, err
	}
	return int(r), sa, nil
}

func compareNames(t *testing.T, fd int) {
	t.Helper()
	want, wantErr := unix.Getsockname(fd)
	got, gotErr := getsockname(fd)
	require.Equal(t, wantErr, gotErr)
	require.Equal(t, want, got, "getsockname")
	want, wantErr = unix.Getpeername(fd)
	got, gotErr = getpeername(fd)
	require.Equal(t, wantErr, gotErr)
	require.Equal(t, want, got, "getpeername")
}

func sysfd(t *testing.T, c any) int {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	var fd int
	require.NoError(t, rc.Control(func(f uintptr) { fd = int(f) }))
	return fd
}

func waitReadable(t *testing.T, fd int) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	_, err := unix.Poll(fds, 60_000)
	require.NoError(t, err)
}
