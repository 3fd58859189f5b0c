//go:build linux

package poll

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/pollfd"
)

// The fault layer (package faults) at the system-call boundary. An FD
// with faults attached has flagFaults set and its *faults.Injector in
// injectors, keyed by the FD's address (a field would grow every
// connection's descriptor; the key is dropped when the FD is destroyed or
// finalized, before its memory can be reused). Every I/O loop tests the
// flag once and, when it is set, runs the loops of this file instead:
// the same lock → prepare → syscall → EAGAIN → wait loop, asking the
// injector before each system call. What the injector withholds is
// reported as EAGAIN, and the wait that follows ends as any wait does: by
// a Kick the injector asked for (pollfd.Desc.Kick), by a real edge (the
// injector then withholds again), or by the deadline or Close. Faults are
// attached only to pollable descriptors, so every such wait can end.

var injectors sync.Map // uintptr(unsafe.Pointer(fd)) → *faults.Injector

// errFaultsNotPollable is SetFaults' error for a descriptor in blocking
// mode: a delay it injected could not be ended by a deadline or Close.
var errFaultsNotPollable = errors.New("faults: descriptor is not pollable")

// SetFaults attaches f to fd, replacing what was attached; nil detaches.
// The injector's state (bytes passed, generators) starts afresh.
func (fd *FD) SetFaults(f *faults.Faults) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	key := uintptr(unsafe.Pointer(fd))
	if f == nil {
		fd.flags.And(^uint32(flagFaults))
		injectors.Delete(key)
		return nil
	}
	if !fd.Pollable() {
		return errFaultsNotPollable
	}
	in, err := f.NewInjector(fd.Sysfd, !fd.isStream)
	if err != nil {
		return err
	}
	injectors.Store(key, in)
	fd.flags.Or(flagFaults)
	return nil
}

// Faults returns the faults attached to fd, or nil.
func (fd *FD) Faults() *faults.Faults {
	if in := fd.injector(); in != noInjector {
		return in.Faults()
	}
	return nil
}

// faulted reports whether faults are attached: the one atomic load every
// I/O loop makes. The loops call the fault path only when it is true, and
// look the injector up there, so that their own frames stay as small as
// before (the parked stack's depth: pollfd/gate.go, "Stack depth").
func (fd *FD) faulted() bool { return fd.flags.Load()&flagFaults != 0 }

// noInjector injects nothing: what a loop that saw the flag gets if the
// faults were detached since.
var noInjector = func() *faults.Injector {
	in, _ := new(faults.Faults).NewInjector(-1, false)
	return in
}()

// injector returns fd's injector, or noInjector.
func (fd *FD) injector() *faults.Injector {
	if fd.faulted() {
		if v, ok := injectors.Load(uintptr(unsafe.Pointer(fd))); ok {
			return v.(*faults.Injector)
		}
	}
	return noInjector
}

// dropFaults forgets fd's injector; destroy and finalize call it.
func (fd *FD) dropFaults() {
	if fd.faulted() {
		fd.flags.And(^uint32(flagFaults))
		injectors.Delete(uintptr(unsafe.Pointer(fd)))
	}
}

func dirOf(mode pollfd.Mode) faults.Dir {
	if mode == pollfd.ModeRead {
		return faults.Read
	}
	return faults.Write
}

// kickAfter wakes mode's waiter after d (at once for d ≤ 0).
func (fd *FD) kickAfter(mode pollfd.Mode, d time.Duration) {
	pd := fd.pd
	if d <= 0 {
		pd.Kick(mode)
		return
	}
	time.AfterFunc(d, func() { pd.Kick(mode) })
}

// shut does to the socket what a ResetAfter or CloseAfter asks for. A TCP
// socket is reset by connect(AF_UNSPEC), which sends a RST and leaves the
// descriptor open; any other socket is shut down both ways. A pipe end
// cannot be shut down (ENOTSOCK, ignored) and closing it is not ours to
// do: only this end's later calls fail, with the injector's ECONNRESET.
func (fd *FD) shut(s faults.Shutdown) {
	switch s {
	case faults.ShutWrite:
		unix.Shutdown(fd.Sysfd, unix.SHUT_WR)
	case faults.ShutReset:
		if proto, err := unix.GetsockoptInt(fd.Sysfd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err == nil && proto == unix.IPPROTO_TCP {
			sa := unix.RawSockaddr{Family: unix.AF_UNSPEC}
			unix.Syscall(unix.SYS_CONNECT, uintptr(fd.Sysfd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
			return
		}
		unix.Shutdown(fd.Sysfd, unix.SHUT_RDWR)
	}
}

// faultCall makes one system call of at most size bytes under in: call
// gets the byte limit to pass. It returns call's result, or what the
// injector put in its place (EAGAIN for a withheld call, after arranging
// the wake-up that ends it), and dropped for a datagram the fault layer
// lost (a write reports success without a call; a read received it).
func (fd *FD) faultCall(in *faults.Injector, mode pollfd.Mode, first bool, size int, call func(limit int) (int, error)) (n int, err error, dropped bool) {
	dir := dirOf(mode)
	st := in.Before(dir, first)
	switch {
	case st.Err != 0:
		fd.shut(st.Shut)
		return 0, st.Err, false
	case st.EOF:
		return 0, nil, false
	case st.Wait > 0:
		fd.kickAfter(mode, st.Wait)
		return 0, unix.EAGAIN, false
	case st.Park:
		return 0, unix.EAGAIN, false
	case st.Again:
		fd.kickAfter(mode, 0)
		return 0, unix.EAGAIN, false
	case st.Drop && mode == pollfd.ModeWrite:
		in.Passed(dir, size)
		return size, nil, true
	}
	limit := size
	if st.Limit > 0 && st.Limit < limit {
		limit = st.Limit
	}
	n, err = call(limit)
	if n > 0 || (err == nil && !fd.isStream) {
		fd.shut(in.Passed(dir, n))
	}
	if err == unix.EAGAIN {
		if d, ok := in.AfterEAGAIN(dir); ok {
			fd.kickAfter(mode, d)
		}
	}
	return n, err, st.Drop && err == nil
}

// readFaulty is ReadContext under a fault layer.
func (fd *FD) readFaulty(ctx context.Context, p []byte) (int, error) {
	in := fd.injector()
	if err := fd.readLock(); err != nil {
		return 0, err
	}
	defer fd.readUnlock()
	if len(p) == 0 {
		return 0, nil
	}
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, err
	}
	if fd.isStream && len(p) > maxRW {
		p = p[:maxRW]
	}
	read := func(limit int) (int, error) { return ignoringEINTRIO(unix.Read, fd.Sysfd, p[:limit]) }
	for first := true; ; first = false {
		n, err, dropped := fd.faultCall(in, pollfd.ModeRead, first, len(p), read)
		if dropped {
			continue
		}
		if err != nil {
			n = 0
			if err == unix.EAGAIN {
				if err = fd.waitContext(ctx, pollfd.ModeRead); err == nil {
					continue
				}
			}
		}
		return n, fd.eofError(n, err)
	}
}

// writeFaulty is WriteContext under a fault layer.
func (fd *FD) writeFaulty(ctx context.Context, p []byte) (int, error) {
	in := fd.injector()
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	if !fd.isStream {
		send := func(b, _ []byte) (int, error) { return ignoringEINTRIO(unix.Write, fd.Sysfd, b) }
		return fd.sendFaulty(ctx, in, p, nil, send, func() sendFunc { return send })
	}
	var nn int
	for first := true; ; first = false {
		max := min(len(p)-nn, maxRW)
		n, err, _ := fd.faultCall(in, pollfd.ModeWrite, first, max, func(limit int) (int, error) {
			return ignoringEINTRIO(unix.Write, fd.Sysfd, p[nn:nn+limit])
		})
		if n > 0 {
			nn += n
		}
		if nn == len(p) {
			return nn, err
		}
		if err == unix.EAGAIN {
			if err = fd.waitContext(ctx, pollfd.ModeWrite); err == nil {
				continue
			}
		}
		if err != nil {
			return nn, err
		}
		if n == 0 {
			return nn, io.ErrUnexpectedEOF
		}
	}
}

// writevFaulty is Writev under a fault layer: each buffer written by
// writeFaulty in turn, *v consumed as Writev consumes it.
func (fd *FD) writevFaulty(v *[][]byte) (int64, error) {
	var total int64
	for len(*v) > 0 {
		n, err := fd.writeFaulty(context.Background(), (*v)[0])
		total += int64(n)
		if err != nil {
			(*v)[0] = (*v)[0][n:]
			return total, err
		}
		(*v)[0] = nil
		*v = (*v)[1:]
	}
	return total, nil
}

// sendFunc sends one datagram: payload and ancillary data, to an address
// it knows.
type sendFunc func(p, oob []byte) (int, error)

// sendFaulty writes one datagram under in, the write lock held and
// Prepare done: dropped (success reported), sent twice, or sent later
// (so that datagrams written after it overtake it) from copies of p and
// oob by the sendFunc keep returns, which must not refer to the caller's
// memory.
func (fd *FD) sendFaulty(ctx context.Context, in *faults.Injector, p, oob []byte, send sendFunc, keep func() sendFunc) (int, error) {
	for first := true; ; first = false {
		n, err, dropped := fd.faultCall(in, pollfd.ModeWrite, first, len(p), func(int) (int, error) {
			dup, delay := in.Datagram()
			if delay > 0 {
				fd.sendLater(delay, append([]byte(nil), p...), append([]byte(nil), oob...), keep())
				return len(p), nil
			}
			n, err := send(p, oob)
			if dup && err == nil {
				send(p, oob)
			}
			return n, err
		})
		if dropped {
			return len(p), nil
		}
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if err = fd.waitContext(ctx, pollfd.ModeWrite); err == nil {
				continue
			}
		}
		return n, err
	}
}

// sendFaultyLocked is sendFaulty with the write lock taken and Prepare
// done, for the datagram write calls.
func (fd *FD) sendFaultyLocked(in *faults.Injector, p, oob []byte, send sendFunc, keep func() sendFunc) (int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	return fd.sendFaulty(context.Background(), in, p, oob, send, keep)
}

// sendLater sends p and oob with send after delay, if fd is still open
// then; an error is dropped, as the network would drop the datagram.
func (fd *FD) sendLater(delay time.Duration, p, oob []byte, send sendFunc) {
	time.AfterFunc(delay, func() {
		if fd.Incref() != nil {
			return
		}
		defer fd.Decref()
		send(p, oob)
	})
}

// rawAddrCopy copies the salen-byte sockaddr at sa (nil: none) to the heap.
func rawAddrCopy(sa unsafe.Pointer, salen uint32) unsafe.Pointer {
	if sa == nil {
		return nil
	}
	b := append([]byte(nil), unsafe.Slice((*byte)(sa), salen)...)
	return unsafe.Pointer(&b[0])
}

// recvFaulty is ioLoop for a datagram read under in: EAGAIN, latency and
// wake-up faults, and lost datagrams.
func recvFaulty[T any](fd *FD, in *faults.Injector, call func() (T, error)) (T, error) {
	for first := true; ; first = false {
		var v T
		_, err, dropped := fd.faultCall(in, pollfd.ModeRead, first, 0, func(int) (int, error) {
			var err error
			v, err = call()
			return 0, err
		})
		if dropped || err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			if err = fd.Wait(pollfd.ModeRead); err == nil {
				continue
			}
		}
		return v, err
	}
}

// DialFault asks the fault layer about a connect about to be made: a
// non-zero errno to fail with instead, or hang, to make no connect and
// wait for the dial's end.
func (fd *FD) DialFault() (err unix.Errno, hang bool) {
	return fd.injector().Dial()
}
