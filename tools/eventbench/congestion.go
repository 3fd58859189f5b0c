//go:build linux

package main

// TCP congestion control, the same for every socket of a round.
//
// BBR paces its sends, and on a device without the fq qdisc (loopback's
// is noqueue) the kernel paces them itself, with one hrtimer per socket:
// a 64 KiB write on loopback, whose MSS is 65,483 bytes, leaves a
// 53-byte segment that waits for the timer and goes out from its
// softirq. Where BBR is the kernel's default, each round's cost then
// depends on which CPU those timers fire on; -congestion lets the
// benchmark pin one algorithm on every socket, the clients' and every
// server's, to measure the event loops with pacing and without.

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// congestion is -congestion: the TCP congestion control algorithm set on
// every socket of a round, or "" for the kernel's default. run sets it
// before any socket is made, in the parent and in every child.
var congestion string

// defaultCongestion is the kernel's default algorithm, net.ipv4's
// tcp_congestion_control, or "unknown".
func defaultCongestion() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// congestionInUse says which algorithm the round's sockets use, for the
// report.
func congestionInUse() string {
	if congestion != "" {
		return congestion + " (-congestion, on every socket)"
	}
	return defaultCongestion() + " (the kernel's default)"
}

// checkCongestion reports whether name can be set on a TCP socket here
// (setsockopt(2) TCP_CONGESTION on a fresh one), so that a bad
// -congestion fails before any round does.
func checkCongestion(name string) error {
	if name == "" {
		return nil
	}
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	defer unix.Close(s)
	if err := unix.SetsockoptString(s, unix.IPPROTO_TCP, unix.TCP_CONGESTION, name); err != nil {
		return fmt.Errorf("-congestion %q: %w (allowed: %s)", name, err, allowedCongestion())
	}
	return nil
}

func allowedCongestion() string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// setCongestionFd sets congestion on the TCP socket fd; nothing if it is
// "".
func setCongestionFd(fd int) error {
	if congestion == "" {
		return nil
	}
	return os.NewSyscallError("setsockopt TCP_CONGESTION",
		unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, congestion))
}

// setCongestion sets congestion on c's socket (a dialer's Control, a
// server's accepted conn).
func setCongestion(c syscall.RawConn) error {
	if congestion == "" {
		return nil
	}
	var err error
	if cerr := c.Control(func(fd uintptr) { err = setCongestionFd(int(fd)) }); cerr != nil {
		return cerr
	}
	return err
}

// setConnCongestion is setCongestion on a conn that has a socket.
func setConnCongestion(c any) error {
	if congestion == "" {
		return nil
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("conn has no socket to set TCP_CONGESTION on")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return setCongestion(rc)
}
