//go:build linux

package gatenet

import "net"

// A socket's local address. net asks getsockname(2) for it at every
// accept and connect; for an accepted stream socket, and a dialled one
// bound by the caller or Unix, gatenet asks when the address is first
// wanted (LocalAddr, an error that names it), so an idle connection holds
// no address and makes one system call fewer until then. A TCP dial from
// a port the kernel chose asks at once, as net does, to see that the
// socket did not connect to itself (selfConnect). Close asks before the number goes, so LocalAddr
// answers after Close, as net's does. A connected stream socket's local
// address never changes, so asking later gives what asking at once would
// have. Listeners and datagram sockets learn theirs when they are made.
//
// fd.laddr is written once (CompareAndSwap from empty) and read
// atomically: LocalAddr may race with anything, Close included.
//
// A reset fault (package faults) disconnects a TCP socket with
// connect(AF_UNSPEC), after which the kernel reports the unspecified
// address (0.0.0.0, ::) for it, keeping only one the socket, or its
// listener, was bound to; a real RST leaves the address alone. So a
// faulted connection learns its address before a fault can act: when it
// is connected or accepted (learnLocalIfFaulted), or when faults are
// attached to it (InjectFaults).

// setLocalAddr records the local address of a socket whose address is
// known when it is made. A nil address (getsockname failed) stays unset:
// localAddr then returns nil, as net's LocalAddr does.
func (fd *netFD) setLocalAddr(a net.Addr) {
	if a != nil {
		fd.laddr.Store(a)
	}
}

// localAddr returns the local address, learning it first if needed.
func (fd *netFD) localAddr() net.Addr {
	if a, ok := fd.laddr.Load().(net.Addr); ok || !fd.lazyLocal {
		return a
	}
	// A reference keeps the number from being closed, and reused, under
	// getsockname. Without one the socket is closed, and its Close, which
	// learns the address before it marks the socket closed, has stored it.
	if fd.pfd.Incref() == nil {
		sa, err := getsockname(fd.pfd.Sysfd)
		fd.pfd.Decref()
		if err == nil {
			if a := fd.addr(sa); a != nil {
				fd.laddr.CompareAndSwap(nil, a)
			}
		}
	}
	a, _ := fd.laddr.Load().(net.Addr)
	return a
}

// learnLocalIfFaulted learns the local address now if faults are attached.
func (fd *netFD) learnLocalIfFaulted() {
	if fd.lazyLocal && fd.pfd.Faults() != nil {
		fd.localAddr()
	}
}
