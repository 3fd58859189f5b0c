//go:build linux

package gatenet

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
)

// ReadBatch and WriteBatch: many datagrams per system call, with the
// signatures of x/net's ipv4.PacketConn and ipv6.PacketConn (whose
// Message is the same type), so that a program that looks for a
// ReadBatch method on its conn (quic-go does) finds one here and needs no
// ipv4.NewPacketConn. GRO (udpsock_gro.go) rides on ReadBatch.

// udpBatch is a UDPConn's state for ReadBatch and WriteBatch, made by
// the first of them and kept for the conn's life.
type udpBatch struct {
	rmu      poll.ContextMutex // the readers': rx, trains and groTried
	rx       mmsgScratch
	groTried bool        // the first ReadBatch tried to turn UDP_GRO on
	gro      atomic.Bool // UDP_GRO is on: every read goes through trains
	tr       *trains     // GRO's received trains; nil until gro

	wmu sync.Mutex // the writers': tx
	tx  mmsgScratch
}

// mmsgScratch is the kernel's view of a batch: a msghdr, iovecs and a
// sockaddr per message, kept between calls so that a batch allocates
// nothing once the conn has seen one of its size.
type mmsgScratch struct {
	hs    []poll.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrAny
}

// batchState returns c's udpBatch, making it on the first call. The
// first ReadBatch turns GRO on, under rmu (a WriteBatch does not).
func (c *UDPConn) batchState() *udpBatch {
	if b := c.batch.Load(); b != nil {
		return b
	}
	c.batch.CompareAndSwap(nil, new(udpBatch))
	return c.batch.Load()
}

// ReadBatch reads up to len(ms) datagrams (recvmmsg(2)), waiting while
// none has arrived, as x/net's ipv4.PacketConn.ReadBatch on Linux: for
// each of the first n messages it sets N (payload bytes, scattered over
// Buffers), NN (control bytes in OOB), Flags (MSG_TRUNC, MSG_CTRUNC) and
// Addr (a *net.UDPAddr). flags are recvmmsg's (MSG_DONTWAIT: EAGAIN
// instead of a wait; MSG_PEEK, MSG_TRUNC, MSG_WAITFORONE, MSG_ERRQUEUE
// as the kernel's, with UDP_GRO on too). Errors are a *net.OpError (Op
// "read") whose Err is net.ErrClosed, os.ErrDeadlineExceeded or an
// *os.SyscallError ("recvmmsg"), with n 0 (x/net's count is -1 there, and
// its error nests a second "raw-read" OpError).
//
// The first ReadBatch turns UDP_GRO on where the kernel has it (Linux
// 5.0; not with faults attached or in a synctest bubble): the kernel
// then queues a train of datagrams sent together (UDP_SEGMENT, as
// quic-go sends) as one, and ReadBatch splits it into the caller's
// messages again, each with its own N, the train's control messages less
// UDP_GRO's, and one *net.UDPAddr shared by the train's datagrams. From
// then on every read method of c splits trains the same way, so that no
// reader ever sees one; only a read through SyscallConn or File sees the
// kernel's queue as it is (a conn FilePacketConn or FileConn makes of
// that File cuts trains again). A read already blocked when the first
// ReadBatch begins may still receive one train whole: begin batch reads
// before other readers, as a QUIC endpoint does. A socket on which the
// caller turned UDP_GRO on itself (SyscallConn) is left as it is: every
// read returns a train whole, with UDP_GRO's control message (its segment
// size), as net's conn does with x/net's ReadBatch.
//
// With faults attached or in a synctest bubble, ReadBatch reads one
// datagram per call, so that each passes the fault layer on its own.
func (c *UDPConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	if len(ms) == 0 {
		return 0, nil
	}
	b := c.batchState()
	var n int
	var err error
	for {
		b.rmu.Lock()
		if !b.groTried {
			b.groTried = true
			if !c.groOptionOn() { // else the caller's: it reads the trains itself
				c.enableGRO(b)
			}
		}
		trains := b.gro.Load() && flags&unix.MSG_ERRQUEUE == 0 // the error queue holds none
		if trains {
			n, err = c.readTrains(b, ms, flags)
		} else {
			n, err = c.readBatchDirect(b, ms, flags)
		}
		b.rmu.Unlock()
		if err != unix.EAGAIN || !trains || flags&unix.MSG_DONTWAIT != 0 {
			break
		}
		// Wait with rmu released: other readers' contexts stay theirs.
		if err = c.fd.pfd.WaitReadable(context.Background()); err != nil {
			break
		}
	}
	if err != nil {
		return n, c.opError("read", c.fd.raddr, wrapSyscallError("recvmmsg", err))
	}
	return n, nil
}

// readBatchDirect receives into the caller's buffers: the batch without
// GRO. b.rmu is held.
func (c *UDPConn) readBatchDirect(b *udpBatch, ms []ipv4.Message, flags int) (int, error) {
	if c.fd.pfd.PerDatagram() || c.fd.bubbleDgram {
		ms = ms[:1]
	}
	hs := b.rx.pack(ms)
	n, err := c.fd.pfd.RecvMmsg(hs, flags, nil)
	if err != nil {
		return 0, err
	}
	for i := range n {
		h := &hs[i]
		ms[i].N, ms[i].NN, ms[i].Flags = int(h.Len), int(h.Hdr.Controllen), int(h.Hdr.Flags)
		old, _ := ms[i].Addr.(*net.UDPAddr)
		ms[i].Addr = udpSender(int(c.fd.family), old, &b.rx.names[i])
	}
	return n, nil
}

// udpSender converts a received sockaddr to a *net.UDPAddr as the read
// methods do, handing back old, unchanged, when it already holds that
// address: a reused Message allocates nothing for a peer it saw last.
func udpSender(family int, old *net.UDPAddr, rsa *unix.RawSockaddrAny) *net.UDPAddr {
	ap := rawAddrPort(family, rsa)
	if old != nil && old.AddrPort() == ap {
		return old
	}
	return net.UDPAddrFromAddrPort(ap)
}

// WriteBatch sends ms as datagrams in order (sendmmsg(2)), waiting while
// the first cannot go, as x/net's ipv4.PacketConn.WriteBatch on Linux: it
// returns how many were sent and sets their N. Each message goes to its
// Addr (a *net.UDPAddr; nil for the connected peer), with its Buffers
// gathered and its OOB (UDP_SEGMENT for GSO, for one) as control data.
// As the kernel's, a failure after the first datagram ends the batch
// short with a nil error. flags are sendmmsg's (MSG_DONTWAIT: EAGAIN
// instead of a wait). Errors are a *net.OpError (Op "write"), with n 0
// (x/net's is -1, with a nested "raw-write" OpError); an Addr of another
// type is EINVAL, as WriteTo's.
//
// With faults attached or in a synctest bubble, the datagrams are sent
// one by one (sendmsg(2)), so that each passes the fault layer or wakes
// its reader on its own.
func (c *UDPConn) WriteBatch(ms []ipv4.Message, flags int) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	if len(ms) == 0 {
		return 0, nil
	}
	for i := range ms {
		if a := ms[i].Addr; a != nil {
			if ua, ok := a.(*net.UDPAddr); !ok || ua == nil {
				return 0, c.opError("write", a, syscall.EINVAL)
			}
		}
	}
	if c.fd.pfd.PerDatagram() || c.fd.bubbleDgram {
		return c.writeBatchEach(ms)
	}
	b := c.batchState()
	b.wmu.Lock()
	defer b.wmu.Unlock()
	hs, err := b.tx.packTo(c, ms)
	var n int
	if err == nil {
		n, err = c.fd.pfd.SendMmsg(hs, flags)
	}
	if err != nil {
		return 0, c.opError("write", nil, wrapSyscallError("sendmmsg", err))
	}
	for i := range n {
		ms[i].N, ms[i].NN, ms[i].Flags = int(hs[i].Len), len(ms[i].OOB), 0
	}
	return n, nil
}

// writeBatchEach is WriteBatch one datagram at a time, through
// WriteMsgUDP's path (its fault and bubble hooks).
func (c *UDPConn) writeBatchEach(ms []ipv4.Message) (int, error) {
	for i := range ms {
		p := gather(ms[i].Buffers)
		var sa rawInetSockaddr
		var err error
		if a, _ := ms[i].Addr.(*net.UDPAddr); a != nil {
			err = c.udpAddrToRaw(a, &sa)
		}
		n := 0
		if err == nil {
			n, _, err = c.writeMsgRaw(p, ms[i].OOB, &sa)
		}
		if err != nil {
			if i > 0 {
				return i, nil
			}
			return 0, c.opError("write", nil, err)
		}
		ms[i].N, ms[i].NN, ms[i].Flags = n, len(ms[i].OOB), 0
	}
	return len(ms), nil
}

// gather is bufs as one slice: bufs[0] itself when there is one.
func gather(bufs [][]byte) []byte {
	if len(bufs) == 1 {
		return bufs[0]
	}
	var p []byte
	for _, b := range bufs {
		p = append(p, b...)
	}
	return p
}

// udpAddrToRaw is WriteToUDP's conversion of a destination.
func (c *UDPConn) udpAddrToRaw(a *net.UDPAddr, sa *rawInetSockaddr) error {
	ap, err := ipToAddrPort(int(c.fd.family), a.IP, 0, a.Zone)
	if err != nil {
		return err
	}
	if a.Port < 0 || a.Port > 0xFFFF {
		return wrapSyscallError("sendmmsg", unix.EINVAL)
	}
	return addrPortToRaw(int(c.fd.family), netip.AddrPortFrom(ap.Addr(), uint16(a.Port)), sa)
}

// grow sizes s for n messages of nbufs buffers in all.
func (s *mmsgScratch) grow(n, nbufs int) {
	if cap(s.hs) < n {
		s.hs = make([]poll.Mmsghdr, n)
		s.names = make([]unix.RawSockaddrAny, n)
	}
	if cap(s.iovs) < nbufs {
		s.iovs = make([]unix.Iovec, nbufs)
	}
	s.hs, s.names, s.iovs = s.hs[:n], s.names[:n], s.iovs[:nbufs]
}

// pack lays ms out for recvmmsg(2): each message's buffers as its iovecs,
// its OOB as its control buffer, a sockaddr for its sender.
func (s *mmsgScratch) pack(ms []ipv4.Message) []poll.Mmsghdr {
	nbufs := 0
	for i := range ms {
		nbufs += len(ms[i].Buffers)
	}
	s.grow(len(ms), nbufs)
	iovs := s.iovs
	for i := range ms {
		h := &s.hs[i]
		*h = poll.Mmsghdr{}
		iovs = packIovecs(&h.Hdr, iovs, ms[i].Buffers)
		if len(ms[i].OOB) > 0 {
			h.Hdr.Control = &ms[i].OOB[0]
			h.Hdr.SetControllen(len(ms[i].OOB))
		}
		h.Hdr.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		h.Hdr.Namelen = unix.SizeofSockaddrAny
	}
	return s.hs
}

// packTo lays ms out for sendmmsg(2), each with its destination. A
// destination that cannot be converted ends the batch before its message,
// as a datagram the kernel refuses does (the next call reports it); the
// first message's is the batch's error.
func (s *mmsgScratch) packTo(c *UDPConn, ms []ipv4.Message) ([]poll.Mmsghdr, error) {
	s.pack(ms)
	for i := range ms {
		h := &s.hs[i]
		h.Hdr.Name, h.Hdr.Namelen = nil, 0
		a, _ := ms[i].Addr.(*net.UDPAddr)
		if a == nil {
			continue
		}
		sa := (*rawInetSockaddr)(unsafe.Pointer(&s.names[i]))
		if err := c.udpAddrToRaw(a, sa); err != nil {
			if i > 0 {
				return s.hs[:i], nil
			}
			return nil, err
		}
		h.Hdr.Name = (*byte)(unsafe.Pointer(&sa.raw))
		h.Hdr.Namelen = sa.len
	}
	return s.hs, nil
}

// packIovecs points hdr at the first len(bufs) of iovs, set to bufs, and
// returns the rest.
func packIovecs(hdr *unix.Msghdr, iovs []unix.Iovec, bufs [][]byte) []unix.Iovec {
	mine := iovs[:len(bufs)]
	for j, p := range bufs {
		mine[j] = iovec(p)
	}
	if len(mine) > 0 {
		hdr.Iov = &mine[0]
		hdr.SetIovlen(len(mine))
	}
	return iovs[len(bufs):]
}

// iovec describes p (an empty p: no base).
func iovec(p []byte) (iov unix.Iovec) {
	if len(p) > 0 {
		iov.Base = &p[0]
		iov.SetLen(len(p))
	}
	return iov
}
