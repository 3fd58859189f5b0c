//go:build linux

package gatenet_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

// Datagram sockets in fake time (pollfd/bubble_dgram.go): each case runs
// in a child process too (TestSynctestEdges).

// TestSynctestChildUDPConnected: a connected UDP pair of the bubble. A
// ReadContext with a 5 s timeout gets the datagram sent after a fake 1 s
// sleep, the next times out at 5 s on the fake clock, and a deadline on
// the other end ends its read on the fake clock too.
func TestSynctestChildUDPConnected(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		srv := listenUDP(t)
		cli, err := gatenet.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		go func() {
			time.Sleep(time.Second)
			cli.Write([]byte("after a second"))
		}()
		start := time.Now()
		buf := make([]byte, 64)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		n, err := srv.ReadContext(ctx, buf)
		cancel()
		require.NoError(t, err)
		require.Equal(t, "after a second", string(buf[:n]))
		require.Equal(t, time.Second, time.Since(start))

		ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
		_, err = srv.ReadContext(ctx, buf)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 6*time.Second, time.Since(start))

		require.NoError(t, cli.SetReadDeadline(time.Now().Add(3*time.Second)))
		_, err = cli.Read(buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.Equal(t, 9*time.Second, time.Since(start))
		require.NoError(t, cli.Close())
		require.NoError(t, srv.Close())
	})
}

// TestSynctestChildUDPUnconnected: two unconnected sockets of the bubble.
// Once one has sent to the other, the other's ReadFrom parks durably: a
// datagram sent after a fake 2 s sleep arrives at 2 s, with its sender's
// address, and the reply reaches the first socket the same way.
func TestSynctestChildUDPUnconnected(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		a, b := listenUDP(t), listenUDP(t)
		_, err := a.WriteTo([]byte("hello"), b.LocalAddr())
		require.NoError(t, err)
		buf := make([]byte, 64)
		_, _, err = b.ReadFrom(buf)
		require.NoError(t, err)
		go func() {
			time.Sleep(2 * time.Second)
			a.WriteTo([]byte("later"), b.LocalAddr())
		}()
		start := time.Now()
		require.NoError(t, b.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, from, err := b.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "later", string(buf[:n]))
		require.Equal(t, a.LocalAddr().String(), from.String())
		require.Equal(t, 2*time.Second, time.Since(start))
		go func() {
			time.Sleep(time.Second)
			b.WriteTo([]byte("reply"), from)
		}()
		require.NoError(t, a.SetReadDeadline(time.Now().Add(5*time.Second)))
		n, _, err = a.ReadFrom(buf)
		require.NoError(t, err)
		require.Equal(t, "reply", string(buf[:n]))
		require.Equal(t, 3*time.Second, time.Since(start))
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

// TestSynctestChildUnixgram: unixgram sockets of the bubble, bound to
// paths, as the UDP ones: the second datagram, after a fake 4 s sleep,
// arrives at 4 s.
func TestSynctestChildUnixgram(t *testing.T) {
	childOnly(t)
	dir := t.TempDir()
	inBubble(t, func(t *testing.T) {
		a, err := gatenet.ListenUnixgram("unixgram", &net.UnixAddr{Name: dir + "/a", Net: "unixgram"})
		require.NoError(t, err)
		b, err := gatenet.ListenUnixgram("unixgram", &net.UnixAddr{Name: dir + "/b", Net: "unixgram"})
		require.NoError(t, err)
		_, err = a.WriteTo([]byte("hello"), b.LocalAddr())
		require.NoError(t, err)
		go func() {
			time.Sleep(4 * time.Second)
			a.WriteTo([]byte("later"), b.LocalAddr())
		}()
		start := time.Now()
		buf := make([]byte, 64)
		for _, want := range []string{"hello", "later"} {
			n, _, err := b.ReadFrom(buf)
			require.NoError(t, err)
			require.Equal(t, want, string(buf[:n]))
		}
		require.Equal(t, 4*time.Second, time.Since(start))
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

// TestSynctestChildUDPOutsideSender: a socket of the bubble that parks
// durably gets a datagram from net's socket, outside the bubble, while
// the bubble is busy: the drain loop's edge wakes the reader (no goroutine
// of the bubble would), and the socket waits as over net from then on.
func TestSynctestChildUDPOutsideSender(t *testing.T) {
	childOnly(t)
	outside, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer outside.Close()
	addrs := make(chan net.Addr, 1)
	go func() {
		to := <-addrs
		time.Sleep(20 * time.Millisecond) // let the reader park
		outside.WriteTo([]byte("from outside"), to)
	}()
	inBubble(t, func(t *testing.T) {
		a, b := listenUDP(t), listenUDP(t)
		_, err := a.WriteTo([]byte("hello"), b.LocalAddr()) // b is the bubble's now
		require.NoError(t, err)
		got := make(chan string, 2)
		go func() {
			buf := make([]byte, 64)
			for range 2 {
				n, _, err := b.ReadFrom(buf)
				if err != nil {
					got <- err.Error()
					return
				}
				got <- string(buf[:n])
			}
		}()
		require.Equal(t, "hello", <-got)
		addrs <- b.LocalAddr()
		var last string
		for busy := true; busy; { // the bubble stays busy until the read: its clock does not move
			select {
			case last = <-got:
				busy = false
			default:
				time.Sleep(0)
			}
		}
		require.Equal(t, "from outside", last)
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

// TestSynctestChildUDPNotReached: a socket no send of the bubble has
// reached waits as net's does, so the bubble does not idle and its clock
// stands still; a context timeout or a deadline set in the bubble then
// ends the read on the real clock, instead of never.
func TestSynctestChildUDPNotReached(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		c := listenUDP(t)
		buf := make([]byte, 8)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		_, err := c.ReadContext(ctx, buf)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NoError(t, c.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		_, err = c.ReadContext(t.Context(), buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		require.NoError(t, c.Close())
	})
}

// TestSynctestChildUDPRawConn: quic-go's way of reading, a batch through
// ipv4.PacketConn (recvmmsg(2) inside the socket's RawConn.Read), after
// setting options through its RawConn.Control: handing the number out so
// does not make a datagram socket ordinary, and the batch read parks
// durably until a send after a fake 3 s sleep.
func TestSynctestChildUDPRawConn(t *testing.T) {
	childOnly(t)
	inBubble(t, func(t *testing.T) {
		a, b := listenUDP(t), listenUDP(t)
		rc, err := b.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, rc.Control(func(fd uintptr) {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
		}))
		_, err = a.WriteTo([]byte("hello"), b.LocalAddr())
		require.NoError(t, err)
		go func() {
			time.Sleep(3 * time.Second)
			a.WriteTo([]byte("later"), b.LocalAddr())
		}()
		pc := ipv4.NewPacketConn(b)
		msgs := []ipv4.Message{{Buffers: [][]byte{make([]byte, 64)}}, {Buffers: [][]byte{make([]byte, 64)}}}
		start := time.Now()
		var got []string
		for len(got) < 2 {
			n, err := pc.ReadBatch(msgs, 0)
			require.NoError(t, err)
			for _, m := range msgs[:n] {
				got = append(got, string(m.Buffers[0][:m.N]))
			}
		}
		require.Equal(t, []string{"hello", "later"}, got)
		require.Equal(t, 3*time.Second, time.Since(start))
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	})
}

// TestSynctestChildUDPRefused: a connected UDP socket whose peer, a
// socket of the bubble, has closed. Its own send after a fake 1 s draws
// ICMP port unreachable, which ends its durable Read with ECONNREFUSED at
// that fake time, as over net; before, no goroutine of the bubble woke
// the read and synctest reported a deadlock. With and without a read
// deadline an hour away, and with and without a datagram that reached the
// peer first.
func TestSynctestChildUDPRefused(t *testing.T) {
	childOnly(t)
	for _, c := range []struct {
		name              string
		deadline, greeted bool
	}{{"plain", false, false}, {"deadline", true, false}, {"after a datagram", false, true}, {"both", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				srv := listenUDP(t)
				cli, err := gatenet.DialUDP("udp", nil, srv.LocalAddr().(*net.UDPAddr))
				require.NoError(t, err)
				defer cli.Close()
				if c.greeted {
					_, err := cli.Write([]byte("hello"))
					require.NoError(t, err)
				}
				require.NoError(t, srv.Close())
				start := time.Now()
				if c.deadline {
					require.NoError(t, cli.SetReadDeadline(start.Add(time.Hour)))
				}
				go func() {
					time.Sleep(time.Second)
					cli.Write([]byte("x"))
				}()
				_, err = cli.Read(make([]byte, 8))
				require.ErrorIs(t, err, unix.ECONNREFUSED)
				require.Equal(t, time.Second, time.Since(start))
			})
		})
	}
}

// TestSynctestChildUDPRawConnSend: quic-go's way of writing, through
// ipv4.PacketConn (sendto(2) and sendmmsg(2) inside the socket's
// RawConn.Write), after a fake 1 s sleep: the durable reader of the
// bubble gets the datagrams at that fake time. Before, the send woke no
// one, the bubble idled and its clock ran to the reader's deadline.
func TestSynctestChildUDPRawConnSend(t *testing.T) {
	childOnly(t)
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "WriteTo", true: "WriteBatch"}[batch], func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				a, b := listenUDP(t), listenUDP(t)
				defer a.Close()
				defer b.Close()
				_, err := a.WriteTo([]byte("first"), b.LocalAddr()) // b is durable from here
				require.NoError(t, err)
				buf := make([]byte, 8)
				_, _, err = b.ReadFrom(buf)
				require.NoError(t, err)
				start := time.Now()
				require.NoError(t, b.SetReadDeadline(start.Add(time.Hour)))
				go func() {
					time.Sleep(time.Second)
					pc := ipv4.NewPacketConn(a)
					if batch {
						pc.WriteBatch([]ipv4.Message{{Buffers: [][]byte{[]byte("later")}, Addr: b.LocalAddr()}}, 0)
					} else {
						pc.WriteTo([]byte("later"), nil, b.LocalAddr())
					}
				}()
				n, _, err := b.ReadFrom(buf)
				require.NoError(t, err)
				require.Equal(t, "later", string(buf[:n]))
				require.Equal(t, time.Second, time.Since(start))
			})
		})
	}
}
