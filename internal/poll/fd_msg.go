//go:build linux

package poll

import (
	"context"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// The datagram and message calls. Unlike Read they have no zero-length
// shortcut (ReadFrom(nil) consumes a datagram, as internal/poll's does),
// and a datagram is written whole or not at all.
//
// Each is internal/poll's loop, written once: ioLoop. Read, Write, Accept
// and the waits (fd.go, fd_wait.go) keep theirs by hand: a goroutine
// parked in them for an idle connection keeps the deepest frames it
// reached on its stack (pollfd/gate.go, "Stack depth"; TestParkedStackDepth),
// and ioLoop and its closure are two frames more. A datagram socket has
// one reader, not one per connection, so these can afford them.

// ioLoop is the loop under every call here: mode's lock, Prepare, then
// call until it fails with neither EINTR nor, on a pollable descriptor,
// EAGAIN (after which it waits for mode). It returns call's last result:
// on a failed wait, the EAGAIN call's result with the wait's error. out,
// for a datagram write, is the datagram call sends: what the fault layer
// drops, duplicates or sends late. On a datagram socket with faults
// attached, the fault layer makes the calls (ioHooked); stream sockets'
// messages are not faulted.
func (fd *FD) ioLoop(mode pollfd.Mode, out *datagram, call func() (int, error)) (int, error) {
	return fd.ioLoopContext(context.Background(), mode, out, call)
}

// ioLoopContext is ioLoop whose waits, for the lock and for mode, also
// end when ctx is done, with ctx's error.
func (fd *FD) ioLoopContext(ctx context.Context, mode pollfd.Mode, out *datagram, call func() (int, error)) (int, error) {
	if err := fd.lockContext(ctx, mode == pollfd.ModeRead); err != nil {
		return 0, err
	}
	defer fd.unlock(mode)
	if err := fd.Prepare(mode); err != nil {
		return 0, err
	}
	for calls := 0; ; calls++ {
		var n int
		var err error
		if fd.hooked() && !fd.isStream {
			n, err = fd.ioHooked(mode, calls, out, call)
		} else {
			n, err = call()
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN && fd.Pollable() {
			if err = fd.waitContext(ctx, mode); err == nil {
				continue
			}
		}
		if err == nil && fd.isStream {
			// A stream's message calls (WriteMsgUnix, ReadMsgUnix) wake
			// the peer in a bubble as its Read and Write do: datagrams
			// count their sends in their own way (netFD.bubbleSending).
			fd.wakePeer(mode)
		}
		return n, err
	}
}

// errnoErr is e as an error, nil for 0.
func errnoErr(e unix.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// ReadFrom wraps recvfrom(2).
func (fd *FD) ReadFrom(p []byte) (int, unix.Sockaddr, error) {
	var sa unix.Sockaddr
	n, err := fd.ioLoop(pollfd.ModeRead, nil, func() (n int, err error) {
		n, sa, err = unix.Recvfrom(fd.Sysfd, p, 0)
		return n, err
	})
	if err != nil {
		n = 0
	}
	return n, sa, fd.eofError(n, err)
}

// ReadFromRaw is ReadFrom leaving the sender's address in *from, raw,
// instead of returning a unix.Sockaddr: x/sys's Recvfrom allocates the
// Sockaddr (and its RawSockaddrAny escapes), so the UDP AddrPort methods
// use this with a RawSockaddrAny on their stack, as internal/poll's
// RecvfromInet4/6 do for net. It wraps recvfrom(2) directly.
func (fd *FD) ReadFromRaw(p []byte, from *unix.RawSockaddrAny) (int, error) {
	buf := unsafe.Pointer(&zeroByte)
	if len(p) > 0 {
		buf = unsafe.Pointer(&p[0])
	}
	n, err := fd.ioLoop(pollfd.ModeRead, nil, func() (int, error) {
		fromLen := uint32(unix.SizeofSockaddrAny)
		r, e := fd.sys6(unix.SYS_RECVFROM, buf, uintptr(len(p)), 0,
			unsafe.Pointer(from), unsafe.Pointer(&fromLen), len(p))
		if e != 0 {
			return 0, e
		}
		return r, nil
	})
	return n, fd.eofError(n, err)
}

// zeroByte is the buffer address for an empty read or write, as x/sys's
// _zero: the kernel is never handed a nil pointer.
var zeroByte byte

// ReadMsg wraps recvmsg(2). It returns the payload and ancillary byte
// counts, the message flags and the sender.
func (fd *FD) ReadMsg(p, oob []byte, flags int) (n, oobn, recvflags int, sa unix.Sockaddr, err error) {
	n, err = fd.ioLoop(pollfd.ModeRead, nil, func() (n int, err error) {
		n, oobn, recvflags, sa, err = unix.Recvmsg(fd.Sysfd, p, oob, flags)
		return n, err
	})
	return n, oobn, recvflags, sa, fd.eofError(n, err)
}

// WriteTo wraps sendto(2). On success it reports len(p).
func (fd *FD) WriteTo(p []byte, sa unix.Sockaddr) (int, error) {
	out := datagram{p: p, to: sa}
	_, err := fd.ioLoop(pollfd.ModeWrite, &out, func() (int, error) {
		return 0, sendto(fd.Sysfd, p, sa)
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// ReadMsgRaw is ReadMsg for a datagram socket leaving the sender's
// address in *from, raw, with the msghdr and iovec on the stack, so that
// nothing is allocated (x/sys's Recvmsg allocates the Sockaddr), as
// internal/poll's ReadMsgInet4/6 do for net. It wraps recvmsg(2) directly.
// Like x/sys's, a failed recvmsg(2) reports n == -1 and no oob or flags;
// unlike it, an empty p is not padded with a dummy byte (that is for
// stream sockets).
func (fd *FD) ReadMsgRaw(p, oob []byte, flags int, from *unix.RawSockaddrAny) (n, oobn, recvflags int, err error) {
	iov := iovec(p)
	msg := msghdr(&iov, oob)
	n, err = fd.ioLoop(pollfd.ModeRead, nil, func() (int, error) {
		msg.Name = (*byte)(unsafe.Pointer(from))
		msg.Namelen = unix.SizeofSockaddrAny
		r, e := fd.sys3(unix.SYS_RECVMSG, unsafe.Pointer(&msg), uintptr(flags), len(p)+len(oob))
		if e != 0 {
			return -1, e
		}
		return r, nil
	})
	if err != nil {
		return n, 0, 0, err // -1 from recvmsg(2), 0 if it was never called
	}
	return n, int(msg.Controllen), int(msg.Flags), fd.eofError(n, nil)
}

// WriteMsgRaw is WriteMsg for a datagram socket with the destination as a
// raw sockaddr of salen bytes at sa (nil: the connected peer) and the
// msghdr on the stack, so that nothing is allocated. It wraps sendmsg(2)
// directly and reports the payload bytes sent and len(oob), as
// internal/poll's WriteMsg does.
func (fd *FD) WriteMsgRaw(p, oob []byte, sa unsafe.Pointer, salen uint32) (int, int, error) {
	iov := iovec(p)
	msg := msghdr(&iov, oob)
	msg.Name = (*byte)(sa)
	msg.Namelen = salen
	out := datagram{p: p, oob: oob, sa: sa, salen: salen}
	n, err := fd.ioLoop(pollfd.ModeWrite, &out, func() (int, error) {
		r, e := fd.sys3(unix.SYS_SENDMSG, unsafe.Pointer(&msg), 0, len(p)+len(oob))
		return r, errnoErr(e)
	})
	if err != nil {
		return 0, 0, err
	}
	return n, len(oob), nil
}

// iovec describes p for a one-buffer msghdr.
func iovec(p []byte) (iov unix.Iovec) {
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	return iov
}

// msghdr is a msghdr for one buffer, *iov, and ancillary data oob. It and
// iovec return by value: storing through a pointer would move the
// caller's iovec and buffers to the heap.
func msghdr(iov *unix.Iovec, oob []byte) (msg unix.Msghdr) {
	msg.Iov = iov
	msg.SetIovlen(1)
	if len(oob) > 0 {
		msg.Control = &oob[0]
		msg.SetControllen(len(oob))
	}
	return msg
}

// WriteToRaw is WriteTo with the destination as a raw sockaddr of salen
// bytes at sa (a caller's stack variable), so that no unix.Sockaddr is
// allocated. It wraps sendto(2) directly; on success it reports len(p).
func (fd *FD) WriteToRaw(p []byte, sa unsafe.Pointer, salen uint32) (int, error) {
	buf := unsafe.Pointer(&zeroByte)
	if len(p) > 0 {
		buf = unsafe.Pointer(&p[0])
	}
	out := datagram{p: p, sa: sa, salen: salen}
	_, err := fd.ioLoop(pollfd.ModeWrite, &out, func() (int, error) {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd.Sysfd), uintptr(buf), uintptr(len(p)), 0,
			uintptr(sa), uintptr(salen))
		return 0, errnoErr(e)
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteMsg wraps sendmsg(2). It reports the payload bytes sent and
// len(oob), as internal/poll's WriteMsg does.
func (fd *FD) WriteMsg(p, oob []byte, sa unix.Sockaddr) (int, int, error) {
	out := datagram{p: p, oob: oob, to: sa}
	n, err := fd.ioLoop(pollfd.ModeWrite, &out, func() (int, error) {
		return sendmsgN(fd.Sysfd, p, oob, sa)
	})
	if err != nil {
		return n, 0, err
	}
	return n, len(oob), nil
}

// sendmsgRaw wraps sendmsg(2) of one datagram to the salen-byte sockaddr
// at sa (nil: the connected peer).
func sendmsgRaw(fd int, p, oob []byte, sa unsafe.Pointer, salen uint32) (int, error) {
	iov := iovec(p)
	msg := msghdr(&iov, oob)
	msg.Name = (*byte)(sa)
	msg.Namelen = salen
	r, _, e := unix.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	return int(r), errnoErr(e)
}
