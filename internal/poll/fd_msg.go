//go:build linux

package poll

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// The datagram and message calls. Unlike Read they have no zero-length
// shortcut (ReadFrom(nil) consumes a datagram, as internal/poll's does),
// and a datagram is written whole or not at all.

// ReadFrom wraps recvfrom(2).
func (fd *FD) ReadFrom(p []byte) (int, unix.Sockaddr, error) {
	if err := fd.readLock(); err != nil {
		return 0, nil, err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, nil, err
	}
	for {
		n, sa, err := unix.Recvfrom(fd.Sysfd, p, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			n = 0
			if err == unix.EAGAIN && fd.Pollable() {
				if err = fd.Wait(pollfd.ModeRead); err == nil {
					continue
				}
			}
		}
		return n, sa, fd.eofError(n, err)
	}
}

// ReadFromRaw is ReadFrom leaving the sender's address in *from, raw,
// instead of returning a unix.Sockaddr: x/sys's Recvfrom allocates the
// Sockaddr (and its RawSockaddrAny escapes), so the UDP AddrPort methods
// use this with a RawSockaddrAny on their stack, as internal/poll's
// RecvfromInet4/6 do for net. It wraps recvfrom(2) directly.
func (fd *FD) ReadFromRaw(p []byte, from *unix.RawSockaddrAny) (int, error) {
	if err := fd.readLock(); err != nil {
		return 0, err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, err
	}
	buf := unsafe.Pointer(&zeroByte)
	if len(p) > 0 {
		buf = unsafe.Pointer(&p[0])
	}
	for {
		fromLen := uint32(unix.SizeofSockaddrAny)
		r, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd.Sysfd), uintptr(buf), uintptr(len(p)), 0,
			uintptr(unsafe.Pointer(from)), uintptr(unsafe.Pointer(&fromLen)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			if e == unix.EAGAIN && fd.Pollable() {
				if err := fd.Wait(pollfd.ModeRead); err != nil {
					return 0, err
				}
				continue
			}
			return 0, e
		}
		return int(r), fd.eofError(int(r), nil)
	}
}

// zeroByte is the buffer address for an empty read or write, as x/sys's
// _zero: the kernel is never handed a nil pointer.
var zeroByte byte

// ReadMsg wraps recvmsg(2). It returns the payload and ancillary byte
// counts, the message flags and the sender.
func (fd *FD) ReadMsg(p, oob []byte, flags int) (n, oobn, recvflags int, sa unix.Sockaddr, err error) {
	if err := fd.readLock(); err != nil {
		return 0, 0, 0, nil, err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, 0, 0, nil, err
	}
	for {
		n, oobn, recvflags, sa, err = unix.Recvmsg(fd.Sysfd, p, oob, flags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.EAGAIN && fd.Pollable() {
				if err = fd.Wait(pollfd.ModeRead); err == nil {
					continue
				}
			}
		}
		return n, oobn, recvflags, sa, fd.eofError(n, err)
	}
}

// WriteTo wraps sendto(2). On success it reports len(p).
func (fd *FD) WriteTo(p []byte, sa unix.Sockaddr) (int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	for {
		err := unix.Sendto(fd.Sysfd, p, 0, sa)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN && fd.Pollable() {
			if err = fd.Wait(pollfd.ModeWrite); err == nil {
				continue
			}
		}
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
}

// ReadMsgRaw is ReadMsg for a datagram socket leaving the sender's
// address in *from, raw, with the msghdr and iovec on the stack, so that
// nothing is allocated (x/sys's Recvmsg allocates the Sockaddr), as
// internal/poll's ReadMsgInet4/6 do for net. It wraps recvmsg(2) directly.
// Like x/sys's, a failed recvmsg(2) reports n == -1 and no oob or flags;
// unlike it, an empty p is not padded with a dummy byte (that is for
// stream sockets).
func (fd *FD) ReadMsgRaw(p, oob []byte, flags int, from *unix.RawSockaddrAny) (n, oobn, recvflags int, err error) {
	if err := fd.readLock(); err != nil {
		return 0, 0, 0, err
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, 0, 0, err
	}
	var iov unix.Iovec
	var msg unix.Msghdr
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	msg.Iov = &iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	for {
		msg.Name = (*byte)(unsafe.Pointer(from))
		msg.Namelen = unix.SizeofSockaddrAny
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(fd.Sysfd), uintptr(unsafe.Pointer(&msg)), uintptr(flags))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			if e == unix.EAGAIN && fd.Pollable() {
				if err := fd.Wait(pollfd.ModeRead); err != nil {
					return -1, 0, 0, err
				}
				continue
			}
			return -1, 0, 0, e
		}
		return int(r), int(msg.Controllen), int(msg.Flags), fd.eofError(int(r), nil)
	}
}

// WriteMsgRaw is WriteMsg for a datagram socket with the destination as a
// raw sockaddr of salen bytes at sa (nil: the connected peer) and the
// msghdr on the stack, so that nothing is allocated. It wraps sendmsg(2)
// directly and reports the payload bytes sent and len(oob), as
// internal/poll's WriteMsg does.
func (fd *FD) WriteMsgRaw(p, oob []byte, sa unsafe.Pointer, salen uint32) (int, int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, 0, err
	}
	var iov unix.Iovec
	var msg unix.Msghdr
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	msg.Iov = &iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	msg.Name = (*byte)(sa)
	msg.Namelen = salen
	for {
		r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd.Sysfd), uintptr(unsafe.Pointer(&msg)), 0)
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN && fd.Pollable() {
			if err := fd.Wait(pollfd.ModeWrite); err != nil {
				return 0, 0, err
			}
			continue
		}
		if e != 0 {
			return 0, 0, e
		}
		return int(r), len(oob), nil
	}
}

// WriteToRaw is WriteTo with the destination as a raw sockaddr of salen
// bytes at sa (a caller's stack variable), so that no unix.Sockaddr is
// allocated. It wraps sendto(2) directly; on success it reports len(p).
func (fd *FD) WriteToRaw(p []byte, sa unsafe.Pointer, salen uint32) (int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	buf := unsafe.Pointer(&zeroByte)
	if len(p) > 0 {
		buf = unsafe.Pointer(&p[0])
	}
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd.Sysfd), uintptr(buf), uintptr(len(p)), 0,
			uintptr(sa), uintptr(salen))
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN && fd.Pollable() {
			if err := fd.Wait(pollfd.ModeWrite); err != nil {
				return 0, err
			}
			continue
		}
		if e != 0 {
			return 0, e
		}
		return len(p), nil
	}
}

// WriteMsg wraps sendmsg(2). It reports the payload bytes sent and
// len(oob), as internal/poll's WriteMsg does.
func (fd *FD) WriteMsg(p, oob []byte, sa unix.Sockaddr) (int, int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, 0, err
	}
	for {
		n, err := unix.SendmsgN(fd.Sysfd, p, oob, sa, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN && fd.Pollable() {
			if err = fd.Wait(pollfd.ModeWrite); err == nil {
				continue
			}
		}
		if err != nil {
			return n, 0, err
		}
		return n, len(oob), nil
	}
}
