//go:build linux

package poll

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// The system calls that take a socket address, for the one address x/sys
// refuses and the kernel and net take: an abstract Unix socket name ("@"
// and 107 bytes) that fills all of sun_path. x/sys's SockaddrUnix counts
// a terminating NUL for every name, though an abstract one has none; the
// syscall package, which net uses, does not, so such a name goes through
// it.

// fullAbstract returns sa as the syscall package's address if it is a
// Unix abstract name of the whole of sun_path.
func fullAbstract(sa unix.Sockaddr) (*syscall.SockaddrUnix, bool) {
	su, ok := sa.(*unix.SockaddrUnix)
	if !ok || len(su.Name) != len(unix.RawSockaddrUnix{}.Path) || su.Name[0] != 0 && su.Name[0] != '@' {
		return nil, false
	}
	return &syscall.SockaddrUnix{Name: "@" + su.Name[1:]}, true
}

// Bind wraps bind(2), as unix.Bind.
func Bind(fd int, sa unix.Sockaddr) error {
	if s, ok := fullAbstract(sa); ok {
		return syscall.Bind(fd, s)
	}
	return unix.Bind(fd, sa)
}

// Connect wraps connect(2), as unix.Connect.
func Connect(fd int, sa unix.Sockaddr) error {
	if s, ok := fullAbstract(sa); ok {
		return syscall.Connect(fd, s)
	}
	return unix.Connect(fd, sa)
}

// sendto wraps sendto(2) with no flags, as unix.Sendto.
func sendto(fd int, p []byte, sa unix.Sockaddr) error {
	if s, ok := fullAbstract(sa); ok {
		return syscall.Sendto(fd, p, 0, s)
	}
	return unix.Sendto(fd, p, 0, sa)
}

// sendmsgN wraps sendmsg(2) with no flags, as unix.SendmsgN.
func sendmsgN(fd int, p, oob []byte, sa unix.Sockaddr) (int, error) {
	if s, ok := fullAbstract(sa); ok {
		return syscall.SendmsgN(fd, p, oob, s, 0)
	}
	return unix.SendmsgN(fd, p, oob, sa, 0)
}
