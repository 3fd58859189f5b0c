//go:build linux

package main

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestCongestionOnEverySocket checks that -congestion reaches both ends
// of a round's connection, the client's and the server's accepted
// socket, for every server.
func TestCongestionOnEverySocket(t *testing.T) {
	want := "reno"
	if defaultCongestion() == want {
		want = "cubic"
	}
	if err := checkCongestion(want); err != nil {
		t.Skipf("cannot set %s here: %v", want, err)
	}
	congestion = want
	defer func() { congestion = "" }()
	for _, name := range serverNames {
		t.Run(name, func(t *testing.T) {
			s, err := startServer(name, defaultReadBuf)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			}()
			c, err := dial(s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := socketCongestion(t, c); got != want {
				t.Errorf("client's socket: %q, want %q", got, want)
			}
			// The server sets it once it has accepted the conn.
			local, remote := c.LocalAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
			var got string
			for limit := time.Now().Add(10 * time.Second); got != want && time.Now().Before(limit); time.Sleep(time.Millisecond) {
				got = acceptedCongestion(t, remote.Port, local.Port)
			}
			if got != want {
				t.Errorf("server's accepted socket: %q, want %q", got, want)
			}
		})
	}
}

func TestCongestionUnknown(t *testing.T) {
	err := checkCongestion("no-such-algorithm")
	if err == nil || !strings.Contains(err.Error(), "no-such-algorithm") {
		t.Fatalf("checkCongestion of an unknown algorithm: %v", err)
	}
	if err := run([]string{"-congestion", "no-such-algorithm", "-rounds", "1", "-workloads", "bulk"}, os.Stdout, os.Stderr, strings.NewReader("")); err == nil {
		t.Fatal("eventbench ran with an unknown -congestion")
	}
}

func socketCongestion(t *testing.T, c net.Conn) string {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cc string
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cc, serr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return cc
}

// acceptedCongestion finds, among this process's descriptors, the TCP
// socket bound to localPort and connected to peerPort, and returns its
// congestion control ("" if there is none yet).
func acceptedCongestion(t *testing.T, localPort, peerPort int) string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(l, "socket:") {
			continue
		}
		sa, err := unix.Getsockname(fd)
		if a, ok := sa.(*unix.SockaddrInet4); err != nil || !ok || a.Port != localPort {
			continue
		}
		pa, err := unix.Getpeername(fd)
		if a, ok := pa.(*unix.SockaddrInet4); err != nil || !ok || a.Port != peerPort {
			continue
		}
		cc, err := unix.GetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION)
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}
	return ""
}
