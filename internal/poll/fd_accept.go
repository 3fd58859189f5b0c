//go:build linux

package poll

import (
	"context"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// Accept wraps accept4(2) with SOCK_NONBLOCK|SOCK_CLOEXEC, leaving the
// peer's address in *rsa, raw, for the caller to convert (as ReadFromRaw
// does: addresses are the socket layer's business). Under the read lock it
// accepts until EAGAIN before it waits (one edge may announce many
// connections); ECONNABORTED is retried silently, as internal/poll does.
// The returned string names the failed syscall for wrapping.
func (fd *FD) Accept(rsa *unix.RawSockaddrAny) (int, string, error) {
	return fd.AcceptContext(context.Background(), rsa)
}

// AcceptContext is Accept whose wait also ends when ctx is done, with
// ctx's error.
func (fd *FD) AcceptContext(ctx context.Context, rsa *unix.RawSockaddrAny) (int, string, error) {
	if err := fd.readLockContext(ctx); err != nil {
		return -1, "", err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return -1, "", err
	}
	for {
		var s int
		var err error
		if fd.hooked() {
			s, err = fd.acceptHooked(rsa)
		} else {
			s, err = accept4(fd.Sysfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, rsa)
		}
		if err == nil {
			return s, "", nil
		}
		switch err {
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EAGAIN:
			if fd.Pollable() {
				if err = fd.waitContext(ctx, pollfd.ModeRead); err == nil {
					continue
				}
				return -1, "", err
			}
		}
		return -1, "accept4", err
	}
}

// accept4 wraps accept4(2), the peer's address left raw in *rsa.
func accept4(s, flags int, rsa *unix.RawSockaddrAny) (int, error) {
	n := uint32(unix.SizeofSockaddrAny)
	r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(s), uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&n)), uintptr(flags), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}
