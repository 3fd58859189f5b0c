//go:build linux

package gatenet

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getsockname and getpeername wrap those system calls, and
// acceptedSockaddr converts the address accept4(2) reported
// (internal/poll's FD.Accept), as x/sys/unix's Getsockname, Getpeername
// and Accept4 do, with one system call fewer: for an AF_INET or AF_INET6
// address x/sys first asks the socket's protocol (getsockopt(SO_PROTOCOL),
// to tell an L2TP/IP socket apart), which net does not. They are for the
// sockets gatenet makes (TCP, UDP, raw IP, Unix) and accepts (a listening
// socket is never L2TP/IP); sockets that come from elsewhere
// (file_sock.go) keep x/sys's calls. Connection set-up asks for addresses
// three or four times, and a connection's whole life is about forty
// system calls.

// getsockname wraps getsockname(2).
func getsockname(s int) (unix.Sockaddr, error) {
	return sockname(unix.SYS_GETSOCKNAME, s, unix.Getsockname)
}

// getpeername wraps getpeername(2).
func getpeername(s int) (unix.Sockaddr, error) {
	return sockname(unix.SYS_GETPEERNAME, s, unix.Getpeername)
}

// sockname makes the system call trap (getsockname or getpeername) on s
// and converts the address; x/sys's call, again, converts another family.
func sockname(trap uintptr, s int, xsys func(int) (unix.Sockaddr, error)) (unix.Sockaddr, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(trap, uintptr(s), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		return nil, e
	}
	if sa, ok := rawToSockaddr(&rsa); ok {
		return sa, nil
	}
	return xsys(s)
}

// acceptedSockaddr converts rsa, the peer's address accept4(2) reported
// for the new socket ns. For another family (a listener from
// FileListener) it asks x/sys for the peer's address instead, and closes
// ns if that fails.
func acceptedSockaddr(ns int, rsa *unix.RawSockaddrAny) (unix.Sockaddr, error) {
	if sa, ok := rawToSockaddr(rsa); ok {
		return sa, nil
	}
	sa, err := unix.Getpeername(ns)
	if err != nil {
		unix.Close(ns)
		return nil, err
	}
	return sa, nil
}

// rawToSockaddr converts an AF_INET, AF_INET6 or AF_UNIX address exactly
// as x/sys's anyToSockaddr converts a TCP, UDP, raw IP or Unix socket's
// (an abstract Unix name's leading NUL reads as '@', and the name ends at
// the first NUL); it reports false for any other family.
func rawToSockaddr(rsa *unix.RawSockaddrAny) (unix.Sockaddr, bool) {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		pp := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return &unix.SockaddrInet4{Port: int(portFromRaw(&pp.Port)), Addr: pp.Addr}, true
	case unix.AF_INET6:
		pp := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return &unix.SockaddrInet6{Port: int(portFromRaw(&pp.Port)), ZoneId: pp.Scope_id, Addr: pp.Addr}, true
	case unix.AF_UNIX:
		pp := (*unix.RawSockaddrUnix)(unsafe.Pointer(rsa))
		if pp.Path[0] == 0 {
			pp.Path[0] = '@'
		}
		n := 0
		for n < len(pp.Path) && pp.Path[n] != 0 {
			n++
		}
		return &unix.SockaddrUnix{Name: string(unsafe.Slice((*byte)(unsafe.Pointer(&pp.Path[0])), n))}, true
	}
	return nil, false
}
