//go:build linux

package poll

import (
	"errors"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/faultinject"
	"github.com/gatenet/gatenet/internal/pollhook"
	"github.com/gatenet/gatenet/pollfd"
)

// The fault layer (package faults) at the system-call boundary. An FD
// with faults attached has flagFaults set and its faults and injector
// (internal/faultinject) in injectors, keyed by the FD's address (a field
// would grow every
// connection's descriptor; the key is dropped when the FD is destroyed or
// finalized, before its memory can be reused).
//
// The I/O loops are the loops of fd.go, fd_msg.go and fd_vec.go: each
// tests the flag at its system-call step and, when it is set, calls its
// step here instead (readHooked, writeHooked, writevHooked, ioHooked,
// acceptHooked), out of line, so that an unfaulted loop pays one load
// and a branch and its frame does not grow. What the injector withholds
// is reported as EAGAIN, and the loop's wait that follows ends as any
// wait does: by a kick the injector asked for, by a real edge (the
// injector then withholds again), or by the deadline or Close. Faults are
// attached only to pollable descriptors, so every such wait can end.

var injectors sync.Map // uintptr(unsafe.Pointer(fd)) → *attached

// attached is what SetFaults attached to an FD.
type attached struct {
	f  *faults.Faults
	in faultinject.Injector
}

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
	traffic := faultinject.Stream
	if !fd.isStream {
		traffic = faultinject.Datagrams
	}
	in, err := faultinject.New(f, fd.Sysfd, traffic)
	if err != nil {
		return err
	}
	injectors.Store(key, &attached{f, in})
	fd.flags.Or(flagFaults)
	neverDurable(fd.pd) // its delays end on the real clock (fd_bubble.go)
	return nil
}

// Faults returns the faults attached to fd, or nil.
func (fd *FD) Faults() *faults.Faults {
	return fd.attached().f
}

// hooked reports whether faults are attached, the FD is paired in a
// synctest bubble (fd_bubble.go) or a ReadyList watches it (fd_wait.go):
// the one load each system call step of a loop makes, to call its step
// here instead.
func (fd *FD) hooked() bool { return fd.flags.Load()&(flagFaults|flagBubble|flagWatched) != 0 }

// copyRefused reports whether sendfile and splice refuse fd, for the
// caller to copy through a buffer: with faults attached (that copy goes
// through the fault layer) or a ReadyList watching it (its reads tell
// the list what they found). One paired in a synctest bubble moves bytes
// with them, each call that did waking the peer (wakePeer), as a loop's
// step does.
func (fd *FD) copyRefused() bool { return fd.flags.Load()&(flagFaults|flagWatched) != 0 }

// faulted reports whether faults are attached.
func (fd *FD) faulted() bool { return fd.flags.Load()&flagFaults != 0 }

// nothingAttached injects nothing: what a step that saw the flag gets if
// the faults were detached since.
var nothingAttached = func() *attached {
	in, err := faultinject.New(new(faults.Faults), -1, faultinject.Stream)
	if err != nil {
		panic(err)
	}
	return &attached{nil, in}
}()

// attached returns what is attached to fd, or nothingAttached.
func (fd *FD) attached() *attached {
	if fd.faulted() {
		if v, ok := injectors.Load(uintptr(unsafe.Pointer(fd))); ok {
			return v.(*attached)
		}
	}
	return nothingAttached
}

// injector returns fd's injector.
func (fd *FD) injector() faultinject.Injector { return fd.attached().in }

// dropFaults forgets fd's injector; destroy and finalize call it.
func (fd *FD) dropFaults() {
	if fd.faulted() {
		fd.flags.And(^uint32(flagFaults))
		injectors.Delete(uintptr(unsafe.Pointer(fd)))
	}
}

// The loops' steps when hooked. Each is the loop's own system call made
// through hookStep; calls is how many system calls the loop's I/O call
// made before this one. They are not inlined: their closures would
// otherwise sit in the loops' frames.

//go:noinline
func (fd *FD) readHooked(p []byte, calls int) (int, error) {
	n, err := fd.hookStep(pollfd.ModeRead, calls, len(p), nil, func(limit int) (int, error) {
		return fd.read(p[:limit])
	})
	fd.noteDrained(n, len(p), err)
	return n, err
}

//go:noinline
func (fd *FD) writeHooked(p []byte, calls int) (int, error) {
	write := func(limit int) (int, error) { return fd.write(p[:limit]) }
	if fd.isStream {
		return fd.hookStep(pollfd.ModeWrite, calls, len(p), nil, write)
	}
	return fd.hookStep(pollfd.ModeWrite, calls, len(p), &datagram{p: p}, write)
}

// writevHooked is Writev's step: a stream's cut to the injector's limit
// across the buffers; a datagram's, gathered for the datagram faults.
//
//go:noinline
func (fd *FD) writevHooked(iovecs []unix.Iovec, calls int) (int, error) {
	size := 0
	for _, iov := range iovecs {
		size += int(iov.Len)
	}
	call := func(limit int) (int, error) { return fd.writev(cutIovecs(iovecs, limit)) }
	if fd.isStream {
		return fd.hookStep(pollfd.ModeWrite, calls, size, nil, call)
	}
	if !fd.faulted() {
		return fd.hookStep(pollfd.ModeWrite, calls, size, nil, call)
	}
	p := make([]byte, 0, size)
	for _, iov := range iovecs {
		p = append(p, unsafe.Slice(iov.Base, iov.Len)...)
	}
	return fd.hookStep(pollfd.ModeWrite, calls, size, &datagram{p: p}, call)
}

// cutIovecs shortens iovecs, in place, to limit bytes.
func cutIovecs(iovecs []unix.Iovec, limit int) []unix.Iovec {
	for i := range iovecs {
		if int(iovecs[i].Len) >= limit {
			iovecs[i].SetLen(limit)
			return iovecs[:i+1]
		}
		limit -= int(iovecs[i].Len)
	}
	return iovecs
}

// ioHooked is ioLoop's step: faulted on datagram sockets only (a stream
// socket's messages are not).
//
//go:noinline
func (fd *FD) ioHooked(mode pollfd.Mode, calls int, out *datagram, call func() (int, error)) (int, error) {
	if fd.isStream {
		n, err := call()
		if err == nil {
			fd.wakePeer(mode)
		}
		return n, err
	}
	size := 0
	if out != nil {
		size = len(out.p)
	}
	return fd.hookStep(mode, calls, size, out, func(int) (int, error) { return call() })
}

// acceptHooked is AcceptContext's step: accept4(2), unless the injector
// fails it. A listener is never paired, so this is a fault's step.
func (fd *FD) acceptHooked(rsa *unix.RawSockaddrAny) (int, error) {
	if e := fd.injector().Accept(); e != 0 { // nothing attached: nothingAttached's, which fails none
		return -1, e
	}
	return accept4(fd.Sysfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, rsa)
}

// ErrDialHang is DialFault's answer for a connect the fault layer loses
// (faults.DialErrors with no errno): make none, and wait for the dial's
// deadline or cancellation, as for a SYN that is never answered.
var ErrDialHang = errors.New("poll: the fault layer loses this connect")

// DialFault asks the fault layer about a connect about to be made: nil to
// make it, an errno to fail with instead, or ErrDialHang.
func (fd *FD) DialFault() error {
	switch e, hang := fd.injector().Dial(); {
	case hang:
		return ErrDialHang
	case e != 0:
		return e
	}
	return nil
}

// hookStep makes a loop's system call, call, of at most size bytes:
// through faultStep if faults are attached; then, if it succeeded, it
// wakes the peer in a synctest bubble (fd_bubble.go).
func (fd *FD) hookStep(mode pollfd.Mode, calls, size int, out *datagram, call func(limit int) (int, error)) (n int, err error) {
	if fd.faulted() {
		n, err = fd.faultStep(mode, calls, size, out, call)
	} else {
		n, err = call(size)
	}
	if err == nil {
		fd.wakePeer(mode)
	}
	return n, err
}

// faultStep makes a loop's system call, call, of at most size bytes, as
// the injector decides: call gets the byte limit to pass (a stream's
// chunk). It returns call's result, or what the injector put in its
// place: EAGAIN for a withheld call, after arranging the kick that ends
// its wait; an error or the end of the stream; success for a datagram
// write (out) it lost or holds back. A datagram read it loses is made
// again, as the next datagram is the one the caller gets.
func (fd *FD) faultStep(mode pollfd.Mode, calls, size int, out *datagram, call func(limit int) (int, error)) (int, error) {
	in := fd.injector()
	dir := dirOf(mode)
	for ; ; calls++ {
		var st faultinject.Step
		if calls == 0 {
			st = in.Begin(dir)
		} else {
			st = in.Before(dir)
		}
		switch {
		case st.Err != 0:
			fd.shut(st.Shut)
			return 0, st.Err
		case st.EOF:
			return 0, nil
		case st.Wait > 0:
			fd.kickAfter(mode, st.Wait)
			return 0, unix.EAGAIN
		case st.Park:
			return 0, unix.EAGAIN
		case st.Again:
			fd.kickAfter(mode, 0)
			return 0, unix.EAGAIN
		case st.Drop && mode == pollfd.ModeWrite:
			in.Passed(dir, size)
			return size, nil
		}
		var n int
		var err error
		if out != nil {
			n, err = fd.send(in, out, call)
		} else {
			limit := size
			if st.Limit > 0 && st.Limit < limit {
				limit = st.Limit
			}
			n, err = call(limit)
		}
		if n > 0 || (err == nil && !fd.isStream) {
			fd.shut(in.Passed(dir, n))
		}
		if err == unix.EAGAIN {
			if d, ok := in.AfterEAGAIN(dir); ok {
				fd.kickAfter(mode, d)
			}
		}
		if st.Drop && err == nil {
			continue // a datagram read: what it received is lost
		}
		return n, err
	}
}

func dirOf(mode pollfd.Mode) faultinject.Dir {
	if mode == pollfd.ModeRead {
		return faultinject.Read
	}
	return faultinject.Write
}

// kick wakes mode's waiter on pd with no event, as an edge would (counted
// as Stats.WakeupsKick): pollfd's unexported Desc.kick, reached through
// internal/pollhook. Every kick of the fault layer goes through here.
var kick = pollhook.Kick.(func(*pollfd.Desc, pollfd.Mode))

// hungUp is pollfd's Desc.hungUp (noteDrained, fd_wait.go).
var hungUp = pollhook.HungUp.(func(*pollfd.Desc) bool)

// The fault layer's delays are on the real clock, in a testing/synctest
// bubble too, where a faulted descriptor's waits are never durable (Inject)
// and so the bubble's clock does not move while they last: the injectors
// read the machine's monotonic clock (faultinject.Now), and a delay timed
// in a bubble ends in a goroutine that sleeps in the kernel (afterReal)
// rather than on a timer, which would be the bubble's.

// afterReal runs f after d on the real clock: time.AfterFunc, but for a
// caller in a bubble, whose timer would be the bubble's, a goroutine
// asleep in nanosleep(2), which the bubble does not count as durably
// blocked and whose sleep its fake clock does not shorten. The caller's
// bubble decides, not the descriptor's: a descriptor made outside and
// used in a bubble has its delays timed there too.
func (fd *FD) afterReal(d time.Duration, f func()) {
	if !callerInBubble() {
		time.AfterFunc(d, f)
		return
	}
	go func() {
		ts := unix.NsecToTimespec(int64(d))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
		f()
	}()
}

// callerInBubble reports whether the calling goroutine is in a synctest
// bubble, where time.Now carries no monotonic reading (pollfd's inBubble).
func callerInBubble() bool {
	now := time.Now()
	return now == now.Round(0)
}

// kickAfter wakes mode's waiter after d (at once for d ≤ 0).
func (fd *FD) kickAfter(mode pollfd.Mode, d time.Duration) {
	pd := fd.pd
	if d <= 0 {
		kick(pd, mode)
		return
	}
	fd.afterReal(d, func() { kick(pd, mode) })
}

// shut does to the socket what a ResetAfter or CloseAfter asks for. A TCP
// socket is reset by connect(AF_UNSPEC), which sends a RST and leaves the
// descriptor open; any other socket is shut down both ways. A pipe end
// cannot be shut down (ENOTSOCK, ignored) and closing it is not ours to
// do: only this end's later calls fail, with the injector's ECONNRESET.
func (fd *FD) shut(s faultinject.Shutdown) {
	switch s {
	case faultinject.ShutWrite:
		unix.Shutdown(fd.Sysfd, unix.SHUT_WR)
	case faultinject.ShutReset:
		if proto, err := unix.GetsockoptInt(fd.Sysfd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err == nil && proto == unix.IPPROTO_TCP {
			sa := unix.RawSockaddr{Family: unix.AF_UNSPEC}
			unix.Syscall(unix.SYS_CONNECT, uintptr(fd.Sysfd), uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
			return
		}
		unix.Shutdown(fd.Sysfd, unix.SHUT_RDWR)
	}
}

// A datagram is what a datagram write sends, described for the fault
// layer, which may lose it, send it twice or send it late.
type datagram struct {
	p, oob []byte
	to     unix.Sockaddr  // the destination, or
	sa     unsafe.Pointer // a raw sockaddr of salen bytes; neither: the connected peer
	salen  uint32
}

// send sends out with call now, twice, or later from copies, as the
// injector decides.
func (fd *FD) send(in faultinject.Injector, out *datagram, call func(limit int) (int, error)) (int, error) {
	dup, delay := in.Datagram()
	if delay > 0 {
		if later, ok := out.detached(); ok {
			fd.sendLater(delay, later)
			return len(out.p), nil
		}
	}
	n, err := call(len(out.p))
	if dup && err == nil {
		call(len(out.p))
	}
	return n, err
}

// detached returns d with copies of the caller's memory, for a send after the
// call has returned; false if d's destination is of a kind it cannot
// copy (none gatenet makes), which is then sent at once.
func (d *datagram) detached() (*datagram, bool) {
	c := &datagram{p: append([]byte(nil), d.p...), oob: append([]byte(nil), d.oob...), salen: d.salen}
	if d.sa != nil {
		c.sa = unsafe.Pointer(unsafe.SliceData(append([]byte(nil), unsafe.Slice((*byte)(d.sa), d.salen)...)))
	}
	switch to := d.to.(type) {
	case nil:
	case *unix.SockaddrInet4:
		a := *to
		c.to = &a
	case *unix.SockaddrInet6:
		a := *to
		c.to = &a
	case *unix.SockaddrUnix:
		c.to = &unix.SockaddrUnix{Name: strings.Clone(to.Name)}
	default:
		return nil, false
	}
	return c, true
}

// sendLater sends d after delay, if fd is still open then; an error is
// dropped, as the network would drop the datagram.
func (fd *FD) sendLater(delay time.Duration, d *datagram) {
	fd.afterReal(delay, func() {
		if fd.Incref() != nil {
			return
		}
		defer fd.Decref()
		if d.to != nil {
			sendmsgN(fd.Sysfd, d.p, d.oob, d.to)
		} else {
			sendmsgRaw(fd.Sysfd, d.p, d.oob, d.sa, d.salen)
		}
	})
}
