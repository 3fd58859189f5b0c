//go:build linux

package gatenet_test

import (
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// A descriptor's read and write locks across bubbles (internal/poll's
// fdSema): a goroutine of a bubble queued behind a holder outside it, and
// the holder's unlock that wakes it, must neither crash the process (a
// sync.Cond woken from outside its waiter's bubble is a fatal error) nor
// leave the bubble counted as blocked while it waits on the real clock.
// Run in child processes by TestSynctestEdges.

// outsideRunner runs each func it is given on a goroutine outside every
// bubble.
func outsideRunner(t *testing.T) chan<- func() {
	ch := make(chan func())
	go func() {
		for f := range ch {
			go f()
		}
	}()
	t.Cleanup(func() { close(ch) })
	return ch
}

// parkedOutside runs read outside every bubble and returns once it has
// had a real moment to park (nothing is asserted about time). parked is
// a channel made outside the bubble: a bubble's own would block durably.
func parkedOutside(outside chan<- func(), parked chan struct{}, read func()) {
	outside <- func() {
		go func() { time.Sleep(30 * time.Millisecond); parked <- struct{}{} }()
		read()
	}
	<-parked
}

// TestSynctestChildLockHeldOutside: a pipe of the bubble read by a
// goroutine outside it, and by one of the bubble queued behind it; bytes
// written from outside end both reads.
func TestSynctestChildLockHeldOutside(t *testing.T) {
	childOnly(t)
	outside := outsideRunner(t)
	res, parked := make(chan error, 2), make(chan struct{}, 1) // made outside the bubble
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		parkedOutside(outside, parked, func() { _, err := r.Read(make([]byte, 1)); res <- err })
		go func() { _, err := r.Read(make([]byte, 1)); res <- err }()
		outside <- func() { time.Sleep(30 * time.Millisecond); w.Write([]byte("ab")) }
		require.NoError(t, <-res)
		require.NoError(t, <-res)
	})
}

// TestSynctestChildCloseWhileOutsideReads: Close in the bubble while a
// goroutine outside it reads waits for that read to leave its system
// call (a plain wait, not a durable one the bubble would deadlock on).
func TestSynctestChildCloseWhileOutsideReads(t *testing.T) {
	childOnly(t)
	outside := outsideRunner(t)
	res, parked := make(chan error, 1), make(chan struct{}, 1)
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer w.Close()
		parkedOutside(outside, parked, func() { _, err := r.Read(make([]byte, 1)); res <- err })
		require.NoError(t, r.Close())
		require.ErrorIs(t, <-res, os.ErrClosed)
	})
}

// TestSynctestChildSharedFixtureLock: a pipe made outside every bubble (a
// fixture shared by tests) is read outside, and by a goroutine of a
// bubble queued behind that read: its wait is an ordinary one.
func TestSynctestChildSharedFixtureLock(t *testing.T) {
	childOnly(t)
	outside := outsideRunner(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	res, parked := make(chan error, 2), make(chan struct{}, 1)
	parkedOutside(outside, parked, func() { _, err := r.Read(make([]byte, 1)); res <- err })
	inBubble(t, func(t *testing.T) {
		go func() { _, err := r.Read(make([]byte, 1)); res <- err }()
		outside <- func() { time.Sleep(30 * time.Millisecond); w.Write([]byte("ab")) }
		require.NoError(t, <-res)
		require.NoError(t, <-res)
	})
}

// TestSynctestChildLockInBubble: two goroutines of a bubble read one pipe
// of it; the one queued for the lock waits durably, so the clock moves to
// the read deadline, which ends both reads at exactly its fake time.
func TestSynctestChildLockInBubble(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		bothEndAtDeadline(t, r.SetReadDeadline, func() error { _, err := r.Read(make([]byte, 1)); return err })
	})
}

// bothEndAtDeadline sets a deadline an hour of fake time ahead with set,
// runs wait in two goroutines, one of which queues for the descriptor's
// lock, and requires both to end with the deadline's error at exactly its
// time: the queued one waited durably too.
func bothEndAtDeadline(t *testing.T, set func(time.Time) error, wait func() error) {
	t.Helper()
	start := time.Now()
	require.NoError(t, set(start.Add(time.Hour)))
	res := make(chan error, 2)
	for range 2 {
		go func() { res <- wait() }()
	}
	require.ErrorIs(t, <-res, os.ErrDeadlineExceeded)
	require.ErrorIs(t, <-res, os.ErrDeadlineExceeded)
	require.Equal(t, time.Hour, time.Since(start))
}

// TestSynctestChildLockInBubbleListener: two Accepts of a listener of the
// bubble (one dial of the bubble has reached it); the one queued for the
// listener's lock waits durably too, so the clock moves to the deadline,
// which ends both at exactly its fake time.
func TestSynctestChildLockInBubbleListener(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		ln, err := gatenet.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		defer ln.Close()
		c, err := gatenet.Dial("tcp4", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		s, err := ln.Accept()
		require.NoError(t, err)
		defer s.Close()

		bothEndAtDeadline(t, ln.SetDeadline, func() error { _, err := ln.Accept(); return err })
	})
}

// TestSynctestChildLockInBubbleDatagram: two readers of a datagram socket
// that a send of the bubble reached: the second, queued for the read lock,
// waits durably, and both reads end at the deadline's fake time.
func TestSynctestChildLockInBubbleDatagram(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		srv := listenUDP(t)
		defer srv.Close()
		cli, err := gatenet.DialUDP("udp4", nil, srv.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		defer cli.Close()
		_, err = cli.Write([]byte("x"))
		require.NoError(t, err)
		_, _, err = srv.ReadFrom(make([]byte, 8))
		require.NoError(t, err)

		bothEndAtDeadline(t, srv.SetReadDeadline, func() error { _, _, err := srv.ReadFrom(make([]byte, 8)); return err })
	})
}

// TestSynctestShutdownWakesOwnWaiters: CloseRead and CloseWrite in a
// bubble end the same conn's own parked Read (EOF) and Write (EPIPE), as
// outside a bubble, at the fake time they were called; without a wake
// the durable parks heard nothing and the bubble deadlocked.
func TestSynctestShutdownWakesOwnWaiters(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				address := "127.0.0.1:0"
				if network == "unix" {
					address = t.TempDir() + "/s"
				}
				c, s := testutil.Pair(t, network, address)
				defer s.Close()
				defer c.Close()
				start := time.Now()
				go func() { time.Sleep(2 * time.Second); c.(interface{ CloseRead() error }).CloseRead() }()
				_, err := c.Read(make([]byte, 1))
				require.ErrorIs(t, err, io.EOF)
				require.Equal(t, 2*time.Second, time.Since(start))

				// Fill the send path, then CloseWrite ends the parked Write.
				go func() { time.Sleep(3 * time.Second); c.(interface{ CloseWrite() error }).CloseWrite() }()
				_, err = c.Write(make([]byte, 64<<20))
				require.ErrorIs(t, err, syscall.EPIPE)
				require.Equal(t, 5*time.Second, time.Since(start))
			})
		})
	}
}

// TestSynctestMessageSendsWake: a Unix stream conn's WriteMsgUnix, and a
// connected datagram socket's Writev and WriteBuffers, wake the peer's
// durable reader as their Write does (the bubble deadlocked).
func TestSynctestMessageSendsWake(t *testing.T) {
	t.Run("unix-stream-WriteMsgUnix", func(t *testing.T) {
		inBubble(t, func(t *testing.T) {
			c, s := testutil.Pair(t, "unix", t.TempDir()+"/s")
			start := time.Now()
			go func() {
				time.Sleep(time.Second)
				c.(*gatenet.UnixConn).WriteMsgUnix([]byte("m"), nil, nil)
			}()
			n, err := s.Read(make([]byte, 8))
			require.NoError(t, err)
			require.Equal(t, 1, n)
			require.Equal(t, time.Second, time.Since(start))
		})
	})
	for _, network := range []string{"udp", "unixgram"} {
		for _, how := range []string{"Writev", "WriteBuffers"} {
			t.Run(network+"-"+how, func(t *testing.T) {
				inBubble(t, func(t *testing.T) {
					var a, b *gatenet.UDPConn
					var ua, ub *gatenet.UnixConn
					var reader io.Reader
					var writer io.Writer
					var writev func([][]byte) (int64, error)
					switch network {
					case "udp":
						pc, err := gatenet.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
						require.NoError(t, err)
						b = pc
						defer b.Close()
						a, err = gatenet.DialUDP("udp4", nil, b.LocalAddr().(*net.UDPAddr))
						require.NoError(t, err)
						defer a.Close()
						reader, writer, writev = b, a, a.Writev
						if how == "WriteBuffers" {
							writev = func(v [][]byte) (int64, error) { nb := net.Buffers(v); return a.WriteBuffers(&nb) }
						}
					default:
						dir := t.TempDir()
						var err error
						ub, err = gatenet.ListenUnixgram("unixgram", &net.UnixAddr{Name: dir + "/b", Net: "unixgram"})
						require.NoError(t, err)
						defer ub.Close()
						ua, err = gatenet.DialUnix("unixgram", &net.UnixAddr{Name: dir + "/a", Net: "unixgram"}, &net.UnixAddr{Name: dir + "/b", Net: "unixgram"})
						require.NoError(t, err)
						defer ua.Close()
						reader, writer, writev = ub, ua, ua.Writev
						if how == "WriteBuffers" {
							writev = func(v [][]byte) (int64, error) { nb := net.Buffers(v); return ua.WriteBuffers(&nb) }
						}
					}
					// A first datagram, by Write, makes the reader durable.
					_, err := writer.Write([]byte("first"))
					require.NoError(t, err)
					_, err = reader.Read(make([]byte, 8))
					require.NoError(t, err)
					start := time.Now()
					go func() { time.Sleep(time.Second); writev([][]byte{[]byte("m")}) }()
					n, err := reader.Read(make([]byte, 8))
					require.NoError(t, err)
					require.Equal(t, 1, n)
					require.Equal(t, time.Second, time.Since(start))
				})
			})
		}
	}
}

// TestSynctestChildDeadlineOutsideReader: a read deadline set in the
// bubble, on its fake clock, ends a Read made outside the bubble on the
// real clock, as net's does: the bubble, waiting on the outside reader,
// never idles, so its clock would never get there.
func TestSynctestChildDeadlineOutsideReader(t *testing.T) {
	childOnly(t)
	outside := outsideRunner(t)
	res := make(chan error, 1) // made outside the bubble
	inBubble(t, func(t *testing.T) {
		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		require.NoError(t, r.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
		outside <- func() { _, err := r.Read(make([]byte, 1)); res <- err }
		require.ErrorIs(t, <-res, os.ErrDeadlineExceeded)
	})
}

// TestSynctestChildDeadlineOtherBubble: a read deadline set in one bubble
// and waited on in a later one runs on the real clock there, measured by
// the real clock's share of its span, not against the second bubble's
// fake clock (every bubble's starts at the same instant): a deadline set
// an hour into the first bubble's time, already past, ends the read at
// once rather than an hour later; one set 10 s ahead does not end a read
// made an hour into the second bubble's time, which bytes written from
// outside end.
func TestSynctestChildDeadlineOtherBubble(t *testing.T) {
	childOnly(t)
	outside := outsideRunner(t)
	c, s := testutil.TCPPair(t) // made outside every bubble: never durable
	inBubble(t, func(t *testing.T) {
		time.Sleep(time.Hour)
		require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Millisecond)))
	})
	time.Sleep(10 * time.Millisecond) // the deadline passes on the real clock
	inBubble(t, func(t *testing.T) {
		_, err := s.Read(make([]byte, 1))
		require.ErrorIs(t, err, os.ErrDeadlineExceeded, "at once: it passed")
	})

	inBubble(t, func(t *testing.T) {
		require.NoError(t, s.SetReadDeadline(time.Now().Add(10*time.Second)))
	})
	outside <- func() { time.Sleep(50 * time.Millisecond); c.Write([]byte("x")) }
	inBubble(t, func(t *testing.T) {
		time.Sleep(time.Hour)
		n, err := s.Read(make([]byte, 1))
		require.NoError(t, err, "10 s of real time were left")
		require.Equal(t, 1, n)
	})
}
