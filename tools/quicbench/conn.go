//go:build linux

package main

// The counting wrapper around each side's UDP socket: it passes every
// call through to the socket and counts the system calls of the data
// path, keeping every optional interface quic-go probes for, so that
// quic-go enables on the wrapper exactly the optimisations it would on
// the socket itself (sys_conn.go, sys_conn_oob.go, sys_conn_buffers*.go in
// quic-go v0.65.0):
//
//   - SetReadBuffer, SetWriteBuffer and SyscallConn: the buffer sizes
//     (setReceiveBuffer, setSendBuffer), DF, ECN and packet info
//     (setsockopt through Control) and GSO (getsockopt UDP_SEGMENT);
//   - ReadMsgUDP and WriteMsgUDP with the above: quic.OOBCapablePacketConn,
//     so quic-go reads in batches and writes with WriteMsgUDP;
//   - ReadBatch(ms []ipv4.Message, flags int): only on batchConn, the
//     wrapper made for a socket that has it, since quic-go looks for it
//     by type assertion and would otherwise read through
//     ipv4.NewPacketConn(conn), for which the conn must be a net.Conn
//     (and x/net's socket.NewConn finds SyscallConn and ReadMsgUDP on it).
//     Both wrappers are net.Conns, as *net.UDPConn is.
//
// What is counted, per side (counters), is each system call attempt on
// the data path, EAGAIN attempts included where the wrapper can see them:
//
//   - every call of the function given to the RawConn's Read or Write
//     (x/net's ipv4.PacketConn.ReadBatch runs recvmmsg(2) in Read's
//     callback, again after each wait for readability);
//   - every ReadBatch, ReadMsgUDP, ReadFrom, Read, WriteMsgUDP, WriteTo
//     and Write call, as one: these retry EAGAIN inside the socket, out
//     of the wrapper's sight.
//
// RawConn.Control (setsockopt, getsockopt at setup) is not counted.

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// udpSocket is what both *net.UDPConn and *gatenet.UDPConn are: a
// net.PacketConn and a net.Conn with quic-go's optional methods.
type udpSocket interface {
	net.PacketConn
	Read(b []byte) (int, error)
	Write(b []byte) (int, error)
	RemoteAddr() net.Addr
	SyscallConn() (syscall.RawConn, error)
	SetReadBuffer(bytes int) error
	SetWriteBuffer(bytes int) error
	ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error)
	WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error)
}

// batchReader is quic-go's batchConn.
type batchReader interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
}

// counters are one side's counts. All are atomic: quic-go reads and
// writes from different goroutines.
type counters struct {
	recv      atomic.Int64 // receive system call attempts
	send      atomic.Int64 // send system call attempts
	recvDgram atomic.Int64 // datagrams received (native ReadBatch, ReadMsgUDP, ReadFrom, Read only; not through RawConn)
	sendDgram atomic.Int64 // datagrams sent (a GSO send counts its segments)
	gsoSends  atomic.Int64 // sends with a UDP_SEGMENT control message
	ecnSends  atomic.Int64 // sends with an ECT(0), ECT(1) or CE mark in their IP_TOS / IPV6_TCLASS control message
}

// sideCounts is a snapshot of counters, or the difference of two.
type sideCounts struct {
	Recv      int64 `json:"recv_calls"`
	Send      int64 `json:"send_calls"`
	RecvDgram int64 `json:"recv_datagrams,omitempty"`
	SendDgram int64 `json:"send_datagrams"`
	GSOSends  int64 `json:"gso_sends"`
	ECNSends  int64 `json:"ecn_sends"`
}

func (c *counters) snapshot() sideCounts {
	return sideCounts{
		Recv: c.recv.Load(), Send: c.send.Load(),
		RecvDgram: c.recvDgram.Load(), SendDgram: c.sendDgram.Load(),
		GSOSends: c.gsoSends.Load(), ECNSends: c.ecnSends.Load(),
	}
}

func (s sideCounts) sub(t sideCounts) sideCounts {
	return sideCounts{
		Recv: s.Recv - t.Recv, Send: s.Send - t.Send,
		RecvDgram: s.RecvDgram - t.RecvDgram, SendDgram: s.SendDgram - t.SendDgram,
		GSOSends: s.GSOSends - t.GSOSends, ECNSends: s.ECNSends - t.ECNSends,
	}
}

// syscalls is the side's receive and send attempts.
func (s sideCounts) syscalls() int64 { return s.Recv + s.Send }

// countingConn wraps a socket without ReadBatch.
type countingConn struct {
	c udpSocket
	n *counters
}

// batchConn wraps a socket with ReadBatch.
type batchConn struct {
	*countingConn
	b batchReader
}

// Both are what quic-go needs to enable its UDP optimisations.
var (
	_ quic.OOBCapablePacketConn = (*countingConn)(nil)
	_ net.Conn                  = (*countingConn)(nil)
	_ quic.OOBCapablePacketConn = (*batchConn)(nil)
	_ batchReader               = (*batchConn)(nil)
)

// wrap returns c's counting wrapper: a *batchConn if c has ReadBatch, a
// *countingConn if not.
func wrap(c udpSocket, n *counters) net.PacketConn {
	cc := &countingConn{c: c, n: n}
	if b, ok := c.(batchReader); ok {
		return &batchConn{countingConn: cc, b: b}
	}
	return cc
}

func (w *batchConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	w.n.recv.Add(1)
	n, err := w.b.ReadBatch(ms, flags)
	w.n.recvDgram.Add(int64(n))
	return n, err
}

func (w *countingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	w.n.recv.Add(1)
	n, a, err := w.c.ReadFrom(b)
	if err == nil {
		w.n.recvDgram.Add(1)
	}
	return n, a, err
}

func (w *countingConn) Read(b []byte) (int, error) {
	w.n.recv.Add(1)
	n, err := w.c.Read(b)
	if err == nil {
		w.n.recvDgram.Add(1)
	}
	return n, err
}

func (w *countingConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	w.n.recv.Add(1)
	n, oobn, flags, addr, err = w.c.ReadMsgUDP(b, oob)
	if err == nil {
		w.n.recvDgram.Add(1)
	}
	return n, oobn, flags, addr, err
}

func (w *countingConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	w.n.send.Add(1)
	w.n.sendDgram.Add(1)
	return w.c.WriteTo(b, addr)
}

func (w *countingConn) Write(b []byte) (int, error) {
	w.n.send.Add(1)
	w.n.sendDgram.Add(1)
	return w.c.Write(b)
}

func (w *countingConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	w.n.send.Add(1)
	seg, ecn := parseSendOOB(oob)
	dgrams := int64(1)
	if seg > 0 {
		w.n.gsoSends.Add(1)
		dgrams = int64((len(b) + seg - 1) / seg)
	}
	if ecn {
		w.n.ecnSends.Add(1)
	}
	w.n.sendDgram.Add(dgrams)
	return w.c.WriteMsgUDP(b, oob, addr)
}

// parseSendOOB reads what quic-go puts in a send's control messages: the
// GSO segment size (0 for none) and whether the packet carries an ECN
// codepoint other than Not-ECT.
func parseSendOOB(oob []byte) (seg int, ecn bool) {
	for len(oob) > 0 {
		h, body, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return seg, ecn
		}
		switch {
		case h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_SEGMENT && len(body) >= 2:
			seg = int(binary.NativeEndian.Uint16(body))
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && len(body) >= 1:
			ecn = body[0]&0x3 != 0
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(body) >= 4:
			ecn = binary.NativeEndian.Uint32(body)&0x3 != 0
		}
		oob = rest
	}
	return seg, ecn
}

func (w *countingConn) SyscallConn() (syscall.RawConn, error) {
	rc, err := w.c.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &countingRawConn{rc: rc, n: w.n}, nil
}

func (w *countingConn) Close() error                       { return w.c.Close() }
func (w *countingConn) LocalAddr() net.Addr                { return w.c.LocalAddr() }
func (w *countingConn) RemoteAddr() net.Addr               { return w.c.RemoteAddr() }
func (w *countingConn) SetDeadline(t time.Time) error      { return w.c.SetDeadline(t) }
func (w *countingConn) SetReadDeadline(t time.Time) error  { return w.c.SetReadDeadline(t) }
func (w *countingConn) SetWriteDeadline(t time.Time) error { return w.c.SetWriteDeadline(t) }
func (w *countingConn) SetReadBuffer(bytes int) error      { return w.c.SetReadBuffer(bytes) }
func (w *countingConn) SetWriteBuffer(bytes int) error     { return w.c.SetWriteBuffer(bytes) }

// countingRawConn counts each call of Read's and Write's function: one
// system call attempt each (x/net's recvmmsg and sendmmsg make exactly
// one per call).
type countingRawConn struct {
	rc syscall.RawConn
	n  *counters
}

func (r *countingRawConn) Control(f func(fd uintptr)) error { return r.rc.Control(f) }

func (r *countingRawConn) Read(f func(fd uintptr) (done bool)) error {
	return r.rc.Read(func(fd uintptr) bool {
		r.n.recv.Add(1)
		return f(fd)
	})
}

func (r *countingRawConn) Write(f func(fd uintptr) (done bool)) error {
	return r.rc.Write(func(fd uintptr) bool {
		r.n.send.Add(1)
		return f(fd)
	})
}
