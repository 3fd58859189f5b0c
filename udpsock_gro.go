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
//
// A train's control messages are received into a buffer the size of the
// caller's, plus room for UDP_GRO's own, and never less than groOOBSize:
// the kernel cuts them (MSG_CTRUNC) where it would have cut the caller's.
// A datagram held from a train that a call with less room received
// carries that call's cut.

const (
	groSlots   = 8       // trains per recvmmsg(2)
	groBufSize = 1 << 16 // a train's payload is at most 65,535 bytes
	groOOBSize = 256     // a train's control data at least: UDP_GRO, TOS, PKTINFO…
)

// groCmsgSpace is the room UDP_GRO's control message takes.
var groCmsgSpace = unix.CmsgSpace(4)

var groBufs = sync.Pool{New: func() any { return new([groBufSize]byte) }}

// trains is what the kernel returned and the caller has not had yet.
// Guarded by udpBatch.rmu.
type trains struct {
	hs     [groSlots]poll.Mmsghdr
	iovs   [groSlots]unix.Iovec
	names  [groSlots]unix.RawSockaddrAny
	oobs   []byte // control buffers, oobLen bytes per slot
	oobLen int
	oobFor int                         // the room the call asks for: its callers' control buffers'
	bufs   [groSlots]*[groBufSize]byte // from groBufs while held
	k      int                         // slots armed for the next recvmmsg(2)
	family int                         // the socket's

	n, cur int // trains received, and the one being cut
	// The train being cut:
	off, size, seg int              // next datagram's offset, the train's size, its segment size
	flags          int              // its recvmsg flags worth passing on (MSG_CTRUNC)
	trunc          bool             // the kernel truncated it (MSG_TRUNC)
	from           netip.AddrPort   // its sender
	addr           *net.UDPAddr     // from, made for a batch's messages once per train
	ctl            []byte           // its control messages less UDP_GRO's
	ctlBuf         [groOOBSize]byte // ctl's, while they fit

	// What a call hands held datagrams out to, set under rmu for one
	// receive: a batch's messages (dst), or one datagram's buffers (one).
	dst    []ipv4.Message
	one    bool
	oneBuf [1][]byte
	oneOOB []byte
	oneN   int
	oneNN  int
	oneFl  int
	oneFr  netip.AddrPort
	peek   bool       // MSG_PEEK: hand out without taking
	full   bool       // MSG_TRUNC: N is a datagram's whole length
	kflags int        // the caller's flags the kernel's receive takes too
	served int        // what held handed out
	heldFn func() int // held, bound once

	// err is an error a batch's later receive drew after earlier ones
	// had filled messages: the kernel's own, reported by the next read,
	// as recvmmsg(2) reports one after a partial batch.
	err error
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

// groOptionOn reports whether c's socket has UDP_GRO on.
func (c *UDPConn) groOptionOn() bool {
	if err := c.fd.pfd.Incref(); err != nil {
		return false
	}
	defer c.fd.pfd.Decref()
	on, err := unix.GetsockoptInt(c.fd.pfd.Sysfd, unix.IPPROTO_UDP, unix.UDP_GRO)
	return err == nil && on != 0
}

// adoptGRO is enableGRO for a socket made of a file (FileConn,
// FilePacketConn) that had UDP_GRO on already, as a File of a conn that
// ran a ReadBatch has: its reads cut trains from the start. Where this
// package cannot cut them (faults, a bubble), it turns the option off, so
// that no read returns a train whole.
func (c *UDPConn) adoptGRO() {
	if !c.groOptionOn() {
		return
	}
	b := c.batchState()
	b.rmu.Lock()
	defer b.rmu.Unlock()
	b.groTried = true
	c.enableGRO(b)
	if !b.gro.Load() {
		c.fd.setsockoptInt(unix.IPPROTO_UDP, unix.UDP_GRO, 0)
	}
}

// groOn reports whether c's reads go through trains.
func (c *UDPConn) groOn() bool {
	if c == nil {
		return false
	}
	b := c.batch.Load()
	return b != nil && b.gro.Load()
}

// readTrains fills ms from held trains and the kernel without waiting:
// after the held datagrams, it receives again while every slot came back
// full and ms has room, so that a batch is as long as what is queued, up
// to len(ms), as recvmmsg(2)'s is. EAGAIN when nothing was there. b.rmu
// is held; callers wait (WaitReadable) with it released, so that a
// reader waiting for a datagram holds up no other reader's context.
//
// flags are recvmmsg(2)'s as the held datagrams take them: MSG_PEEK hands
// out the next datagram without taking it, in every message, as the
// kernel peeks its next one; MSG_TRUNC makes N the datagram's whole
// length; MSG_WAITFORONE is what ReadBatch does anyway (it waits for one
// and takes what is there then), MSG_DONTWAIT what readTrains does. The
// rest go to the kernel with its receive. (MSG_ERRQUEUE never comes here:
// the error queue holds no trains.)
func (c *UDPConn) readTrains(b *udpBatch, ms []ipv4.Message, flags int) (int, error) {
	t := b.tr
	if err := t.takeErr(); err != nil {
		return 0, err
	}
	t.peek, t.full = flags&unix.MSG_PEEK != 0, flags&unix.MSG_TRUNC != 0
	t.kflags = flags &^ (unix.MSG_PEEK | unix.MSG_TRUNC | unix.MSG_WAITFORONE | unix.MSG_DONTWAIT)
	t.oobFor = 0
	for i := range ms {
		t.oobFor = max(t.oobFor, len(ms[i].OOB))
	}
	defer func() { t.peek, t.full, t.kflags = false, false, 0 }()
	got := 0
	for got < len(ms) {
		t.dst, t.k = ms[got:], min(len(ms)-got, groSlots)
		if t.peek {
			t.k = 1 // the kernel's next train, in every message
		}
		n, more, err := c.receive(context.Background(), t)
		t.dst = nil
		if err != nil {
			if got == 0 {
				return 0, err
			}
			if _, errno := err.(unix.Errno); errno && err != unix.EAGAIN {
				t.err = err
			}
			break
		}
		got += n
		if !more || t.peek {
			break
		}
	}
	return got, nil
}

// readOneTrain hands out one datagram into p and oob from held trains or
// the kernel, without waiting (EAGAIN). b.rmu is held.
func (c *UDPConn) readOneTrain(ctx context.Context, b *udpBatch, p, oob []byte) (n, oobn, flags int, from netip.AddrPort, err error) {
	t := b.tr
	if err := t.takeErr(); err != nil {
		return 0, 0, 0, netip.AddrPort{}, err
	}
	t.one, t.oneBuf[0], t.oneOOB, t.k, t.oobFor = true, p, oob, 1, len(oob)
	_, _, err = c.receive(ctx, t)
	t.one, t.oneBuf[0], t.oneOOB = false, nil, nil
	if err != nil {
		return 0, 0, 0, netip.AddrPort{}, err
	}
	return t.oneN, t.oneNN, t.oneFl, t.oneFr, nil
}

// receive hands out held datagrams or, with none held, receives trains
// (recvmmsg(2), MSG_DONTWAIT) and hands out from them, to t's target;
// more reports that the kernel may hold more (nothing was held back and
// every slot came back full). ctx bounds the wait for the read lock (a
// ReadBatch or WaitRead may hold it, parked). rmu is held.
func (c *UDPConn) receive(ctx context.Context, t *trains) (handed int, more bool, err error) {
	t.served = 0
	k := t.k
	kflags := unix.MSG_DONTWAIT | t.kflags
	if t.peek {
		kflags |= unix.MSG_PEEK
	}
	n, err := c.fd.pfd.RecvMmsgContext(ctx, t.hs[:k], kflags, t.heldFn)
	if err != nil {
		t.release()
		return 0, false, err
	}
	if t.served > 0 {
		return t.served, !t.pending(), nil
	}
	t.load(n)
	handed = t.serve()
	if t.peek { // the kernel keeps the train: hold none of it
		t.n, t.cur = 0, 0
		t.release()
	}
	return handed, n == k && !t.pending(), nil
}

// takeErr returns and forgets an error a partial batch left.
func (t *trains) takeErr() error {
	err := t.err
	t.err = nil
	return err
}

// serve hands held datagrams out to the call's target and returns how
// many.
func (t *trains) serve() int {
	if !t.one {
		return t.fill(t.dst)
	}
	if t.cur >= t.n {
		return 0
	}
	t.oneFr = t.from
	t.oneN, t.oneNN, t.oneFl = t.take(t.oneBuf[:], t.oneOOB)
	return 1
}

// held is RecvMmsg's hook: it hands held datagrams out to the call's
// target, or, with none held, arms the slots for the kernel and returns 0.
func (t *trains) held() int {
	if t.cur < t.n {
		t.served = t.serve()
		return t.served
	}
	if want := max(groOOBSize, t.oobFor+groCmsgSpace); t.oobLen < want {
		t.oobs, t.oobLen = make([]byte, groSlots*want), want // nothing held points into the old
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
		h.Hdr.Control = &t.oobs[i*t.oobLen]
		h.Hdr.SetControllen(t.oobLen)
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
	t.ctl = t.ctlBuf[:0]
	data := t.oobs[t.cur*t.oobLen:][:h.Hdr.Controllen]
	for len(data) > 0 {
		hdr, body, rest, err := unix.ParseOneSocketControlMessage(data)
		if err != nil {
			break
		}
		if hdr.Level == unix.IPPROTO_UDP && hdr.Type == unix.UDP_GRO && len(body) >= 4 {
			t.seg = int(*(*int32)(unsafe.Pointer(&body[0])))
		} else {
			t.ctl = append(t.ctl, data[:len(data)-len(rest)]...)
		}
		data = rest
	}
	if t.seg <= 0 || t.seg > t.size {
		t.seg = t.size // a datagram on its own
	}
	t.from = rawAddrPort(t.family, &t.names[t.cur])
	t.addr = nil
}

// fill hands out held datagrams, one per message of ms, and returns how
// many. Each train's datagrams share one *net.UDPAddr, made for it.
func (t *trains) fill(ms []ipv4.Message) int {
	i := 0
	for ; i < len(ms) && t.cur < t.n; i++ {
		m := &ms[i]
		if t.addr == nil {
			t.addr = net.UDPAddrFromAddrPort(t.from)
		}
		m.Addr = t.addr
		m.N, m.NN, m.Flags = t.take(m.Buffers, m.OOB)
	}
	return i
}

// take hands out the next held datagram: its payload scattered over
// bufs, its train's control messages into oob. It returns the payload
// and control bytes copied and the recvmsg flags.
func (t *trains) take(bufs [][]byte, oob []byte) (n, nn, flags int) {
	end := min(t.off+t.seg, t.size)
	data := t.bufs[t.cur][t.off:end]
	n = scatter(bufs, data)
	flags = t.flags
	if n < len(data) || (t.trunc && end == t.size) {
		flags |= unix.MSG_TRUNC
	}
	if t.full {
		n = len(data)
	}
	var ctrunc bool
	nn, ctrunc = t.copyCtl(oob)
	if ctrunc {
		flags |= unix.MSG_CTRUNC
	}
	if t.peek {
		return n, nn, flags
	}
	t.off = end
	if t.off >= t.size {
		t.cur++
		t.begin()
	}
	return n, nn, flags
}

// copyCtl copies the train's control messages into oob as the kernel's
// put_cmsg(9) does: each message whole while it fits, its padding only
// where there is room for it, and a message that does not fit truncated
// to what room is left (its header's length saying so), while a header
// fits at all. It returns the bytes used and whether anything was cut.
func (t *trains) copyCtl(oob []byte) (n int, ctrunc bool) {
	for ctl := t.ctl; len(ctl) > 0; {
		h, _, rest, err := unix.ParseOneSocketControlMessage(ctl)
		if err != nil {
			break
		}
		room := len(oob) - n
		if room < unix.SizeofCmsghdr {
			return n, true
		}
		l := int(h.Len)
		if room < l {
			ctrunc, l = true, room
			hdr := h
			hdr.SetLen(l)
			copy(oob[n:], (*[unix.SizeofCmsghdr]byte)(unsafe.Pointer(&hdr))[:])
			copy(oob[n+unix.SizeofCmsghdr:n+l], ctl[unix.SizeofCmsghdr:l])
		} else {
			copy(oob[n:n+l], ctl[:l])
		}
		n += min(len(ctl)-len(rest), room)
		ctl = rest
	}
	return n, ctrunc
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

// readOne reads one datagram through the trains, waiting until one
// arrives or ctx is done: every read method's path once GRO is on. It
// holds b.rmu only while it takes a datagram, not while it waits, and
// its wait for b.rmu ends with ctx too.
func (c *UDPConn) readOne(ctx context.Context, p, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	b := c.batch.Load()
	for {
		if err := b.rmu.LockContext(ctx); err != nil {
			return 0, 0, 0, netip.AddrPort{}, err // another reader holds the trains
		}
		n, oobn, flags, addr, err = c.readOneTrain(ctx, b, p, oob)
		b.rmu.Unlock()
		if err != unix.EAGAIN {
			return n, oobn, flags, addr, err
		}
		if err := c.fd.pfd.WaitReadable(ctx); err != nil {
			// -1: recvmsg(2) was made, and failed (EAGAIN), as net's
			// ReadMsg reports a wait that then fails.
			return -1, 0, 0, netip.AddrPort{}, err
		}
	}
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
	if !c.groOn() || len(b) == 0 {
		// A zero-length b reads nothing, after the closed check, as
		// net's: the path without GRO does both.
		return c.conn.ReadContext(ctx, b)
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
