//go:build linux

package gatenet

// Fake time for datagram sockets of a testing/synctest bubble: finding
// whom a send reaches (pollfd/bubble_dgram.go has the rule).
//
// Each UDP and unixgram socket opened in a bubble is recorded under the
// address a send names to reach it: "udp:" and its port (loopback and
// wildcard addresses alike), "unixgram:" and its path. A send of a
// recorded socket looks its destination up, counts itself in on each
// socket it names (SendingInBubble), makes its system call, then tells
// them (Reached), which wakes a durable reader. A connected socket names
// its peer once, at connect: the peer is reached then, and the connected
// socket, which only its peer can send to, is durable from the start if
// the peer is the bubble's.
//
// A send through a socket's RawConn (x/net's ipv4.PacketConn) names its
// destinations inside f, where gatenet does not look: it counts itself in
// on every recorded socket and wakes, after, the durable readers of its
// own bubble, each of which reads or parks again. A socket it reaches that
// is not durable yet does not become so: that takes a send gatenet sees.

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"unsafe"
	"weak"

	"golang.org/x/sys/unix"
)

// bubbleDatagram records fd, a datagram socket just opened in a bubble,
// and reaches its peer if it is connected to one (raddr).
func (fd *netFD) bubbleDatagram(raddr net.Addr) {
	if !fd.pfd.InBubble() || fd.sotype != unix.SOCK_DGRAM || fd.pfd.Faults() != nil {
		return
	}
	key := datagramKey(fd.localAddr())
	if key == "" {
		return
	}
	fd.pfd.DatagramInBubble()
	fd.bubbleDgram = true
	bubbles.mu.Lock()
	if bubbles.dgrams == nil {
		bubbles.dgrams = make(map[string][]fdRef)
	}
	ref := recordLocked(fd, key)
	bubbles.dgrams[key] = append(bubbles.dgrams[key], ref)
	var peers []*netFD
	if peer := datagramKey(raddr); peer != "" {
		if bubbles.dgramPeer == nil {
			bubbles.dgramPeer = make(map[fdRef]string)
		}
		bubbles.dgramPeer[ref] = peer
		peers = live(bubbles.dgrams[peer])
	}
	bubbles.mu.Unlock()
	if len(peers) > 0 {
		fd.pfd.SentInBubble() // only its peer, a socket of the bubble, can send to it
	}
	for _, p := range peers {
		p.pfd.Reached()
	}
}

// datagramKey is the key a datagram socket is recorded under, for its
// address a; "" for an address no socket of the bubble can have.
func datagramKey(a net.Addr) string {
	switch a := a.(type) {
	case *net.UDPAddr:
		if a == nil {
			return ""
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		if ok && (ip.Unmap().IsLoopback() || ip.IsUnspecified()) {
			return "udp:" + strconv.Itoa(a.Port)
		}
	case *net.UnixAddr:
		if a != nil && a.Name != "" {
			return "unixgram:" + a.Name
		}
	}
	return ""
}

// rawDatagramKey is datagramKey for a sockaddr a send builds in place.
func rawDatagramKey(sa *rawInetSockaddr) string {
	port := int(binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.raw.Port))[:]))
	var ip netip.Addr
	switch sa.raw.Family {
	case unix.AF_INET:
		ip = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.raw)).Addr)
	case unix.AF_INET6:
		ip = netip.AddrFrom16(sa.raw.Addr).Unmap()
	}
	if !ip.IsLoopback() && !ip.IsUnspecified() {
		return ""
	}
	return "udp:" + strconv.Itoa(port)
}

// bubbleSending returns the datagram sockets of fd's bubble that a send
// of fd to key (its connected peer's, for "") reaches, each counted in;
// nil if fd is no datagram socket of a bubble. The send then reports to
// bubbleSent.
func (fd *netFD) bubbleSending(key string) []*netFD {
	bubbles.mu.Lock()
	if key == "" {
		key = bubbles.dgramPeer[weak.Make(fd)]
	}
	to := live(bubbles.dgrams[key])
	bubbles.mu.Unlock()
	for _, p := range to {
		p.pfd.SendingInBubble(+1)
	}
	return to
}

// bubbleSent wakes the readers of to, which bubbleSending returned, after
// fd's send (err: whether it was made), and counts the send out.
func (fd *netFD) bubbleSent(to []*netFD, err error) {
	if err == nil && len(to) > 0 {
		fd.pfd.SentInBubble()
	}
	if err == nil && len(to) == 0 && fd.isConnected && fd.bubbleDgram {
		fd.pfd.SentUnreached() // a closed port's ICMP error ends its own read
	}
	for _, p := range to {
		if err == nil {
			p.pfd.Reached()
		}
		p.pfd.SendingInBubble(-1)
	}
}

// bubbleSendingRaw is bubbleSending for a send through fd's RawConn: every
// recorded datagram socket, each counted in.
func (fd *netFD) bubbleSendingRaw() []*netFD {
	var to []*netFD
	bubbles.mu.Lock()
	for _, refs := range bubbles.dgrams {
		to = append(to, live(refs)...)
	}
	bubbles.mu.Unlock()
	for _, p := range to {
		p.pfd.SendingInBubble(+1)
	}
	return to
}

// bubbleSentRaw is bubbleSent for a send through fd's RawConn: it wakes
// the durable readers of to in fd's bubble, and counts the send out.
func (fd *netFD) bubbleSentRaw(to []*netFD, err error) {
	for _, p := range to {
		if err == nil {
			p.pfd.ReachedRaw()
		}
		p.pfd.SendingInBubble(-1)
	}
}

// writeInBubble is a connected datagram socket's Write and WriteContext
// in a bubble: the send reaches its peer.
func (c *conn) writeInBubble(ctx context.Context, b []byte) (int, error) {
	to := c.fd.bubbleSending("")
	n, err := c.fd.pfd.WriteContext(orBackground(ctx), b)
	c.fd.bubbleSent(to, err)
	if err != nil {
		err = c.fd.ioError(ioWrite, err)
	}
	return n, err
}
