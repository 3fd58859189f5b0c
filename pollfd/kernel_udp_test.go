//go:build linux

package pollfd_test

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestUDPLoopbackDeliverySynchronous measures the kernel fact durable
// datagram parks rest on (bubble_dgram.go): a UDP datagram sent on
// loopback is on the receiver's queue when sendto(2) returns. It counts
// the sends after which the receiver is not readable, alone and beside a
// goroutine per CPU that spins; GATENET_UDP_SENDS sets how many (20,000
// by default; docs/DESIGN.md gives the figure for 200,000). A late
// datagram is not lost to a durable park, only to fake time: the drain
// loop's edge then wakes the reader and the socket waits as over net.
func TestUDPLoopbackDeliverySynchronous(t *testing.T) {
	sends := 20_000
	if v, err := strconv.Atoi(os.Getenv("GATENET_UDP_SENDS")); err == nil && v > 0 {
		sends = v
	}
	for _, hog := range []bool{false, true} {
		name := "alone"
		if hog {
			name = "beside a CPU hog"
		}
		t.Run(name, func(t *testing.T) {
			var stop atomic.Bool
			defer stop.Store(true)
			if hog {
				for range runtime.NumCPU() {
					go func() {
						for !stop.Load() {
						}
					}()
				}
			}
			late := udpLateDeliveries(t, sends)
			t.Logf("%d of %d datagrams not readable when sendto returned", late, sends)
			require.LessOrEqual(t, late, sends/100, "loopback UDP delivery is no longer synchronous with sendto")
		})
	}
}

// udpLateDeliveries sends n 64-byte datagrams between two loopback UDP
// sockets and counts those the receiver could not read at once.
func udpLateDeliveries(t *testing.T, n int) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	open := func() (int, *unix.SockaddrInet4) {
		s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(s) })
		require.NoError(t, unix.Bind(s, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
		sa, err := unix.Getsockname(s)
		require.NoError(t, err)
		return s, sa.(*unix.SockaddrInet4)
	}
	tx, _ := open()
	rx, to := open()
	msg, buf := make([]byte, 64), make([]byte, 64)
	late := 0
	for range n {
		require.NoError(t, unix.Sendto(tx, msg, 0, to))
		if _, _, err := unix.Recvfrom(rx, buf, 0); err == unix.EAGAIN {
			late++
			fds := []unix.PollFd{{Fd: int32(rx), Events: unix.POLLIN}}
			_, err := unix.Poll(fds, 1000)
			require.NoError(t, err)
			_, _, err = unix.Recvfrom(rx, buf, 0)
			require.NoError(t, err)
		} else {
			require.NoError(t, err)
		}
	}
	return late
}
