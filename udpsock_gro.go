//go:build linux

package gatenet

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
)

// Receive offload (UDP_GRO, udp(7)). A sender that hands the kernel many
// datagrams at once (UDP_SEGMENT, "GSO") makes one packet of them; with
// UDP_GRO on, the receiving socket queues that packet whole, as a train,
// instead of cutting it into datagrams and queueing each, and recvmsg(2)
// returns the train with its segment size in a UDP_GRO control message.
// On loopback the train goes from sendmsg to recvmsg uncut: one pass
// through the stack for up to 64 KiB of datagrams.
//
// The trains are received into buffers of this package and cut here, so
// that no caller ever sees one: each read method hands out the train's
// datagrams in order, one per message, until none is left, then asks the
// kernel again. RecvMmsg's held hook hands them out under the read lock,
// after the deadline and Close checks, so held datagrams behave as queued
// ones. The buffers come from a pool while trains are held and go back
// when the last datagram is handed out or nothing arrived: a reader
// parked on an idle socket holds none.

const (
	groSlots   = 8       // trains per recvmmsg(2)
	groBufSize = 1 << 16 // a train's payload is at most 65,535 bytes
	groOOBSize = 256     // a train's control data: UDP_GRO, TOS, PKTINFO…
)

var groBufs = sync.Pool{New: func() any { return new([groBufSize]byte) }}

// trains is what the kernel returned and the caller has not had yet.
// Guarded by udpBatch.rmu.
type trains struct {
	hs     [groSlots]poll.Mmsghdr
	iovs   [groSlots]unix.Iovec
	names  [groSlots]unix.RawSockaddrAny
	oobs   [groSlots][groOOBSize]byte
	bufs   [groSlots]*[groBufSize]byte // from groBufs while held
	k      int                         // slots armed for the next recvmmsg(2)
	family int                         // the socket's

	n, cur int // trains received, and the one being cut
	// The train being cut:
	off, size, seg int          // next datagram's offset, the train's size, its segment size
	flags          int          // its recvmsg flags worth passing on (MSG_CTRUNC)
	trunc          bool         // the kernel truncated it (MSG_TRUNC)
	addr           *net.UDPAddr // its sender
	ctl            []byte       // its control messages less UDP_GRO's
	ctlEnds        [8]int       // where each of ctl's messages ends
	nctl           int
	ctlBuf         [groOOBSize]byte

	dst    []ipv4.Message // the caller's, during readTrains
	served int            // what held handed out
	heldFn func() int     // held, bound once
}

// enableGRO turns UDP_GRO on for an IP socket with no faults attached
// and outside any synctest bubble, where the kernel has it; b.rmu is held.
func (c *UDPConn) enableGRO(b *udpBatch) {
	if c.fd.family != unix.AF_INET && c.fd.family != unix.AF_INET6 {
		return
	}
	if c.fd.pfd.PerDatagram() || c.fd.bubbleDgram {
		return
	}
	if c.fd.setsockoptInt(unix.IPPROTO_UDP, unix.UDP_GRO, 1) != nil {
		return // before Linux 5.0, or not UDP: batches without GRO
	}
	t := &trains{family: int(c.fd.family)}
	t.heldFn = t.held
	b.tr = t
	b.gro.Store(true)
}

// groOn reports whether c's reads go through trains.
func (c *UDPConn) groOn() bool {
	if c == nil {
		return false
	}
	b := c.batch.Load()
	return b != nil && b.gro.Load()
}

// readTrains fills ms from held trains or, when none are held, from the
// kernel, waiting (unless flags has MSG_DONTWAIT) until something
// arrives or ctx is done. b.rmu is held.
func (c *UDPConn) readTrains(ctx context.Context, b *udpBatch, ms []ipv4.Message, flags int) (int, error) {
	if flags&^unix.MSG_DONTWAIT != 0 {
		// MSG_PEEK, MSG_ERRQUEUE…: their answer would be a train.
		return 0, unix.EOPNOTSUPP
	}
	t := b.tr
	t.dst, t.k = ms, min(len(ms), groSlots)
	defer func() { t.dst = nil }()
	for {
		t.served = 0
		n, err := c.fd.pfd.RecvMmsg(t.hs[:t.k], unix.MSG_DONTWAIT, t.heldFn)
		if err == nil {
			if t.served > 0 {
				return t.served, nil
			}
			t.load(n)
			return t.fill(ms), nil
		}
		t.release()
		if err != unix.EAGAIN || flags&unix.MSG_DONTWAIT != 0 {
			return 0, err
		}
		if err := c.fd.pfd.WaitReadable(ctx); err != nil {
			return 0, err
		}
	}
}

// held is RecvMmsg's hook: it hands held datagrams out to t.dst, or, with
// none held, arms the slots for the kernel and returns 0.
func (t *trains) held() int {
	if t.cur < t.n {
		t.served = t.fill(t.dst)
		return t.served
	}
	for i := range t.k {
		if t.bufs[i] == nil {
			t.bufs[i] = groBufs.Get().(*[groBufSize]byte)
		}
		t.iovs[i] = iovec(t.bufs[i][:])
		h := &t.hs[i]
		*h = poll.Mmsghdr{}
		h.Hdr.Iov = &t.iovs[i]
		h.Hdr.SetIovlen(1)
		h.Hdr.Name = (*byte)(unsafe.Pointer(&t.names[i]))
		h.Hdr.Namelen = unix.SizeofSockaddrAny
		h.Hdr.Control = &t.oobs[i][0]
		h.Hdr.SetControllen(groOOBSize)
	}
	return 0
}

// release gives the buffers back once every held datagram is out.
func (t *trains) release() {
	if t.cur < t.n {
		return
	}
	for i, p := range t.bufs {
		if p != nil {
			groBufs.Put(p)
			t.bufs[i] = nil
		}
	}
}

// pending reports whether datagrams are held.
func (t *trains) pending() bool { return t.cur < t.n }

// load takes n trains the kernel just returned.
func (t *trains) load(n int) {
	t.n, t.cur = n, 0
	t.begin()
}

// begin starts cutting train t.cur: its size, segment size, sender and
// control messages.
func (t *trains) begin() {
	if t.cur >= t.n {
		return
	}
	h := &t.hs[t.cur]
	t.off, t.size, t.seg = 0, int(h.Len), 0
	t.flags = int(h.Hdr.Flags) & unix.MSG_CTRUNC
	t.trunc = h.Hdr.Flags&unix.MSG_TRUNC != 0
	t.ctl, t.nctl = t.ctlBuf[:0], 0
	data := t.oobs[t.cur][:h.Hdr.Controllen]
	for len(data) > 0 {
		hdr, body, rest, err := unix.ParseOneSocketControlMessage(data)
		if err != nil {
			break
		}
		if hdr.Level == unix.IPPROTO_UDP && hdr.Type == unix.UDP_GRO && len(body) >= 4 {
			t.seg = int(*(*int32)(unsafe.Pointer(&body[0])))
		} else if t.nctl < len(t.ctlEnds) {
			t.ctl = append(t.ctl, data[:len(data)-len(rest)]...)
			t.ctlEnds[t.nctl] = len(t.ctl)
			t.nctl++
		}
		data = rest
	}
	if t.seg <= 0 || t.seg > t.size {
		t.seg = t.size // a datagram on its own
	}
	t.addr = udpSender(t.family, t.addr, &t.names[t.cur])
}

// fill hands out held datagrams, one per message of ms, and returns how
// many.
func (t *trains) fill(ms []ipv4.Message) int {
	i := 0
	for ; i < len(ms) && t.cur < t.n; i++ {
		end := min(t.off+t.seg, t.size)
		data := t.bufs[t.cur][t.off:end]
		m := &ms[i]
		m.N = scatter(m.Buffers, data)
		m.Flags = t.flags
		if m.N < len(data) || (t.trunc && end == t.size) {
			m.Flags |= unix.MSG_TRUNC
		}
		var ctrunc bool
		m.NN, ctrunc = t.copyCtl(m.OOB)
		if ctrunc {
			m.Flags |= unix.MSG_CTRUNC
		}
		m.Addr = t.addr
		t.off = end
		if t.off >= t.size {
			t.cur++
			t.begin()
		}
	}
	return i
}

// copyCtl copies the train's control messages that fit whole into oob,
// as the kernel does, reporting whether any was left out.
func (t *trains) copyCtl(oob []byte) (int, bool) {
	n := 0
	for j := range t.nctl {
		if t.ctlEnds[j] > len(oob) {
			break
		}
		n = t.ctlEnds[j]
	}
	copy(oob, t.ctl[:n])
	return n, n < len(t.ctl)
}

// scatter copies data over bufs in order and returns the bytes copied.
func scatter(bufs [][]byte, data []byte) int {
	n := 0
	for _, b := range bufs {
		if n == len(data) {
			break
		}
		n += copy(b, data[n:])
	}
	return n
}

// readOne reads one datagram through the trains: every read method's
// path once GRO is on.
func (c *UDPConn) readOne(ctx context.Context, p, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	b := c.batch.Load()
	m := []ipv4.Message{{Buffers: [][]byte{p}, OOB: oob}}
	b.rmu.Lock()
	_, err = c.readTrains(ctx, b, m, 0)
	b.rmu.Unlock()
	if err != nil {
		return 0, 0, 0, netip.AddrPort{}, err
	}
	if a, ok := m[0].Addr.(*net.UDPAddr); ok {
		addr = a.AddrPort()
	}
	return m[0].N, m[0].NN, m[0].Flags, addr, nil
}

// heldReadable reports whether datagrams are held: WaitRead's answer
// without the kernel.
func (c *UDPConn) heldReadable() bool {
	b := c.batch.Load()
	b.rmu.Lock()
	defer b.rmu.Unlock()
	return b.tr.pending()
}

// Read implements net.Conn (read(2)) on a connected socket, as net's
// (a zero-length b reads nothing); once GRO is on, through the trains.
func (c *UDPConn) Read(b []byte) (int, error) {
	if !c.groOn() {
		return c.conn.Read(b)
	}
	return c.ReadContext(context.Background(), b)
}

// ReadContext is Read whose wait also ends when ctx is done, with a
// *net.OpError (Op "read") wrapping ctx.Err().
func (c *UDPConn) ReadContext(ctx context.Context, b []byte) (int, error) {
	if !c.groOn() {
		return c.conn.ReadContext(ctx, b)
	}
	if len(b) == 0 {
		return 0, nil
	}
	n, _, _, _, err := c.readOne(orBackground(ctx), b, nil)
	if err != nil {
		return 0, c.fd.ioError(ioRead, err)
	}
	return n, nil
}

// WaitRead parks until a datagram can be read, or until ctx is done, the
// read deadline passes or the conn is closed; once GRO is on, a held
// datagram of a train counts.
func (c *UDPConn) WaitRead(ctx context.Context) error {
	if !c.groOn() || !c.heldReadable() {
		return c.conn.WaitRead(ctx)
	}
	err := c.fd.pfd.ReadCheck()
	if err == nil {
		err = orBackground(ctx).Err()
	}
	if err != nil {
		return c.fd.ioError(ioReadPoll, err)
	}
	return nil
}
