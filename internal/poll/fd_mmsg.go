//go:build linux

package poll

import (
	"context"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// The batch calls, recvmmsg(2) and sendmmsg(2): one wait and one system
// call for many datagrams, as x/net's ipv4.PacketConn.ReadBatch and
// WriteBatch make them through RawConn.Read and Write. Both run ioLoop
// (fd_msg.go), so deadlines, Close and the hooks act as on ReadMsg.

// Mmsghdr is the kernel's struct mmsghdr: one message of a batch and,
// after the call, its length.
type Mmsghdr struct {
	Hdr unix.Msghdr
	Len uint32
}

// RecvMmsg wraps recvmmsg(2): under the read lock and after the deadline
// checks, it fills hs[:n] with n ≥ 1 datagrams, waiting while none has
// arrived; with MSG_DONTWAIT in flags it returns EAGAIN instead of
// waiting.
//
// held, if not nil, is asked first on every try: a count of datagrams the
// caller already holds and can hand out without the kernel (GRO's split
// trains). A positive count is returned as it is, with no system call,
// so that held datagrams keep the lock, the deadline and Close's
// semantics of queued ones.
func (fd *FD) RecvMmsg(hs []Mmsghdr, flags int, held func() int) (int, error) {
	return fd.mmsg(context.Background(), pollfd.ModeRead, unix.SYS_RECVMMSG, hs, flags, held)
}

// RecvMmsgContext is RecvMmsg whose waits, for the read lock and for
// data, also end when ctx is done, with ctx's error.
func (fd *FD) RecvMmsgContext(ctx context.Context, hs []Mmsghdr, flags int, held func() int) (int, error) {
	return fd.mmsg(ctx, pollfd.ModeRead, unix.SYS_RECVMMSG, hs, flags, held)
}

// SendMmsg wraps sendmmsg(2): under the write lock, it sends hs in order
// and returns how many went, n ≥ 1, waiting while the first cannot; with
// MSG_DONTWAIT in flags it returns EAGAIN instead of waiting. As the
// kernel's, a failure after the first datagram ends the batch short with
// a nil error; the next call reports it.
//
// The fault layer acts on whole datagrams (a loss, a copy, a delay of
// each): with faults attached, a caller sends one at a time (PerDatagram).
func (fd *FD) SendMmsg(hs []Mmsghdr, flags int) (int, error) {
	return fd.mmsg(context.Background(), pollfd.ModeWrite, unix.SYS_SENDMMSG, hs, flags, nil)
}

// mmsg is both: the batch call trap on hs, through ioLoop.
func (fd *FD) mmsg(ctx context.Context, mode pollfd.Mode, trap uintptr, hs []Mmsghdr, flags int, held func() int) (int, error) {
	if len(hs) == 0 {
		return 0, nil
	}
	var got int
	size := rawIOMax + 1 // counted only where it can matter
	if fd.keepsP() {
		size = mmsgCapacity(hs)
	}
	_, err := fd.ioLoopContext(ctx, mode, nil, func() (int, error) {
		if held != nil {
			if got = held(); got > 0 {
				return 0, nil
			}
		}
		r, e := fd.sys6(trap, unsafe.Pointer(&hs[0]), uintptr(len(hs)), uintptr(flags), nil, nil, size)
		if e == unix.EAGAIN && flags&unix.MSG_DONTWAIT != 0 {
			return 0, errDontWait
		}
		if e != 0 {
			return 0, e
		}
		got = r
		return mmsgBytes(hs[:got]), nil
	})
	if err == errDontWait {
		err = unix.EAGAIN
	}
	if err != nil {
		return 0, err
	}
	return got, nil
}

// errDontWait carries a MSG_DONTWAIT call's EAGAIN out of ioLoop, which
// would wait on a bare one.
var errDontWait = &dontWaitError{}

type dontWaitError struct{}

func (*dontWaitError) Error() string { return "poll: EAGAIN under MSG_DONTWAIT" }

// mmsgCapacity is how many bytes hs's buffers hold, counted until it
// passes rawIOMax (fd_sys.go).
func mmsgCapacity(hs []Mmsghdr) int {
	n := 0
	for i := 0; i < len(hs) && n <= rawIOMax; i++ {
		h := &hs[i].Hdr
		for _, iov := range unsafe.Slice(h.Iov, h.Iovlen) {
			n += int(iov.Len)
		}
	}
	return n
}

// mmsgBytes is the payload the calls moved: what the fault layer counts.
func mmsgBytes(hs []Mmsghdr) int {
	n := 0
	for i := range hs {
		n += int(hs[i].Len)
	}
	return n
}

// PerDatagram reports whether the descriptor's datagrams must each go
// through a call of their own: a fault layer is attached (it loses,
// copies and delays datagrams one by one), or the descriptor is paired
// in a synctest bubble.
func (fd *FD) PerDatagram() bool { return fd.flags.Load()&(flagFaults|flagBubble) != 0 }

// ReadCheck fails as a read would now, on a closed descriptor or a passed
// read deadline, without reading: a wait's answer from a caller that
// holds datagrams of its own (RecvMmsg's held).
func (fd *FD) ReadCheck() error {
	if err := fd.readLock(); err != nil {
		return err
	}
	defer fd.readUnlock()
	return fd.Prepare(pollfd.ModeRead)
}
