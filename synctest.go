//go:build linux

package gatenet

// Fake time in testing/synctest bubbles: finding the two ends.
//
// pollfd parks a wait durably, so that a bubble's clock can move while it
// waits, only on a descriptor whose peer is a gatenet descriptor of the
// same bubble, and a write on one end wakes the other (pollfd/bubble.go).
// This file finds the peers: each end of a stream connection opened in a
// bubble, dialled or accepted, is recorded until the other end turns up.
//
//	TCP   the ends are the same four-tuple seen from either side: one
//	      end's (local, remote) is the other's (remote, local).
//	Unix  stream and seqpacket sockets carry no name on the dialling end,
//	      so the ends are matched by socket inode: the kernel reports each
//	      socket's peer (sock_diag, UNIX_DIAG_PEER), and fstat its own.
//	Pipe  both ends are made together (pipe.go).
//
// A listener of a bubble accepts durably from the first time a dial of its
// bubble reaches it (by TCP port, by Unix path), and each such dial wakes
// it: a listener only net's clients dial waits as outside a bubble, since
// their connections arrive with no goroutine of the bubble to wake it. A
// connection whose other end never turns up — net's, another process's,
// one made outside the bubble — stays unpaired and parks as outside a
// bubble.

import (
	"encoding/binary"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
)

// bubbles is the registry of descriptors opened in bubbles. It holds them
// weakly, as a net.Listener dropped without Close is not kept alive by
// anything of net's: a descriptor dropped unclosed is collected and its
// finalizer closes it (internal/poll/fd.go), and a cleanup then takes its
// entries out (forgetCollected). An entry whose descriptor was collected
// reads as absent until then.
var bubbles struct {
	mu        sync.Mutex
	halves    map[string]fdRef   // ends waiting for their peer, by their own key
	listeners map[string][]fdRef // by the address a dial names
	dgrams    map[string][]fdRef // datagram sockets, by the address a send names (synctest_dgram.go)
	dgramPeer map[fdRef]string   // a connected datagram socket's peer's key
	keys      map[fdRef]string   // the key each recorded descriptor is under
}

// fdRef is a recorded descriptor: Value is nil once it is unreachable.
type fdRef = weak.Pointer[netFD]

// recordLocked notes that fd is recorded under key, and arranges for its
// entries to go if it is collected unclosed. Called with bubbles.mu held,
// once per descriptor.
func recordLocked(fd *netFD, key string) fdRef {
	if bubbles.keys == nil {
		bubbles.keys = make(map[fdRef]string)
	}
	ref := weak.Make(fd)
	bubbles.keys[ref] = key
	runtime.AddCleanup(fd, forgetCollected, ref)
	return ref
}

// live is the descriptors of refs that are still reachable, in a new
// slice: the callers use it after they let bubbles.mu go.
func live(refs []fdRef) []*netFD {
	var fds []*netFD
	for _, r := range refs {
		if fd := r.Value(); fd != nil {
			fds = append(fds, fd)
		}
	}
	return fds
}

// bubbleListening records a listener opened in a bubble, for the dials of
// the bubble to find.
func (fd *netFD) bubbleListening() {
	if !fd.pfd.InBubble() {
		return
	}
	key := listenerKey(fd.family, fd.localAddr())
	if key == "" {
		return
	}
	bubbles.mu.Lock()
	defer bubbles.mu.Unlock()
	if bubbles.listeners == nil {
		bubbles.listeners = make(map[string][]fdRef)
	}
	bubbles.listeners[key] = append(bubbles.listeners[key], recordLocked(fd, key))
}

// bubbleConnected records one end of a stream connection opened in a
// bubble and pairs it with the other end if that is recorded already. A
// dialled end then wakes the listeners it may have reached: those of ra,
// the address it dialled (nil for an accepted end).
func (fd *netFD) bubbleConnected(ra net.Addr) {
	if !fd.pfd.InBubble() || (fd.sotype != unix.SOCK_STREAM && fd.sotype != unix.SOCK_SEQPACKET) {
		return
	}
	mine, theirs := connKeys(fd)
	var wake []*netFD
	bubbles.mu.Lock()
	if mine != "" && theirs == "" && fd.family == unix.AF_UNIX {
		// A dialled Unix end learnt no peer: not accepted yet when it
		// asked. The accepted end may have looked for it since, not found
		// it and recorded itself: ask again under the lock, which that end
		// held to record itself, so one of the two finds the other.
		mine, theirs = connKeys(fd)
	}
	if mine != "" {
		if ref := bubbles.halves[theirs]; ref.Value() != nil {
			delete(bubbles.halves, theirs)
			delete(bubbles.keys, ref)
			poll.PairInBubble(&fd.pfd, &ref.Value().pfd)
		} else {
			if bubbles.halves == nil {
				bubbles.halves = make(map[string]fdRef)
			}
			bubbles.halves[mine] = recordLocked(fd, mine)
		}
	}
	if ra != nil {
		wake = live(bubbles.listeners[listenerKey(fd.family, ra)])
	}
	bubbles.mu.Unlock()
	for _, ln := range wake {
		ln.pfd.AcceptInBubble()
		ln.pfd.WakeListener()
	}
}

// bubbleForget drops fd from the records as it closes.
func (fd *netFD) bubbleForget() {
	bubbles.mu.Lock()
	defer bubbles.mu.Unlock()
	forgetLocked(weak.Make(fd))
}

// forgetCollected drops the entries of a descriptor collected unclosed:
// the cleanup recordLocked adds.
func forgetCollected(ref fdRef) {
	bubbles.mu.Lock()
	defer bubbles.mu.Unlock()
	forgetLocked(ref)
}

// forgetLocked drops ref's entries, if it has any. Called with bubbles.mu
// held.
func forgetLocked(ref fdRef) {
	key, ok := bubbles.keys[ref]
	if !ok {
		return
	}
	delete(bubbles.keys, ref)
	delete(bubbles.dgramPeer, ref)
	if bubbles.halves[key] == ref {
		delete(bubbles.halves, key)
		return
	}
	for _, recorded := range []map[string][]fdRef{bubbles.listeners, bubbles.dgrams} {
		refs, ok := recorded[key]
		if !ok {
			continue
		}
		if refs = slices.DeleteFunc(refs, func(r fdRef) bool { return r == ref }); len(refs) == 0 {
			delete(recorded, key)
		} else {
			recorded[key] = refs
		}
	}
}

// listenerKey names what a dial reaches: a TCP port (whatever address the
// listener is bound to, as a wildcard one takes loopback dials too), a
// Unix path.
func listenerKey(family int16, a net.Addr) string {
	if a == nil {
		return ""
	}
	switch family {
	case unix.AF_INET, unix.AF_INET6:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return ""
		}
		return "tcp:" + strconv.Itoa(int(ap.Port()))
	case unix.AF_UNIX:
		return "unix:" + a.String()
	}
	return ""
}

// connKeys returns the key fd's end is recorded under and the key its
// peer's is, each empty if it cannot be learnt.
func connKeys(fd *netFD) (mine, theirs string) {
	s := fd.pfd.Sysfd
	switch fd.family {
	case unix.AF_INET, unix.AF_INET6:
		lsa, err := getsockname(s)
		if err != nil {
			return "", ""
		}
		rsa, err := getpeername(s)
		if err != nil {
			return "", ""
		}
		l, r := addrPortOf(lsa), addrPortOf(rsa)
		if !l.IsValid() || !r.IsValid() {
			return "", ""
		}
		return "tcp:" + l.String() + ">" + r.String(), "tcp:" + r.String() + ">" + l.String()
	case unix.AF_UNIX:
		// A dialled end's peer is not a socket with an inode until it is
		// accepted (0): the dialled end is recorded, and the accepted one
		// finds it.
		self, peer, err := unixInodes(s)
		if err != nil {
			return "", ""
		}
		if peer != 0 {
			theirs = "unix:" + strconv.FormatUint(peer, 10)
		}
		return "unix:" + strconv.FormatUint(self, 10), theirs
	}
	return "", ""
}

// addrPortOf is sa as an address and port, IPv4-mapped addresses unmapped,
// so that the two ends of a dual-stack connection agree.
func addrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// The sock_diag request for one Unix socket and its peer (linux/unix_diag.h).
const (
	udiagShowPeer = 0x4 // UDIAG_SHOW_PEER
	unixDiagPeer  = 2   // UNIX_DIAG_PEER
)

// unixInodes returns the inode of the Unix socket s and of its peer, asking
// the kernel's sock_diag interface (NETLINK_SOCK_DIAG) about s's inode.
func unixInodes(s int) (self, peer uint64, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(s, &st); err != nil {
		return 0, 0, err
	}
	self = st.Ino
	nl, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return self, 0, err
	}
	defer unix.Close(nl)
	// nlmsghdr, then unix_diag_req: family, protocol, pad, states, ino,
	// show, cookie (INET_DIAG_NOCOOKIE: look the socket up by inode).
	req := make([]byte, unix.NLMSG_HDRLEN+24)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], uint32(len(req)))
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	b := req[unix.NLMSG_HDRLEN:]
	b[0] = unix.AF_UNIX
	ne.PutUint32(b[4:], ^uint32(0))
	ne.PutUint32(b[8:], uint32(self))
	ne.PutUint32(b[12:], udiagShowPeer)
	ne.PutUint32(b[16:], ^uint32(0))
	ne.PutUint32(b[20:], ^uint32(0))
	if err := unix.Sendto(nl, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return self, 0, err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(nl, buf, 0)
	if err != nil {
		return self, 0, err
	}
	for msg := buf[:n]; len(msg) >= unix.NLMSG_HDRLEN; {
		l := int(ne.Uint32(msg[0:]))
		if l < unix.NLMSG_HDRLEN || l > len(msg) {
			break
		}
		typ, data := ne.Uint16(msg[4:]), msg[unix.NLMSG_HDRLEN:l]
		msg = msg[min((l+3)&^3, len(msg)):]
		if typ == unix.NLMSG_ERROR {
			if len(data) >= 4 {
				if e := int32(ne.Uint32(data)); e != 0 {
					return self, 0, unix.Errno(-e)
				}
			}
			continue
		}
		const msgLen = 16 // unix_diag_msg: family, type, state, pad, ino, cookie
		if len(data) < msgLen || uint64(ne.Uint32(data[4:])) != self {
			continue
		}
		for a := data[msgLen:]; len(a) >= unix.SizeofRtAttr; {
			l := int(ne.Uint16(a[0:]))
			if l < unix.SizeofRtAttr || l > len(a) {
				break
			}
			if ne.Uint16(a[2:]) == unixDiagPeer && l >= unix.SizeofRtAttr+4 {
				return self, uint64(ne.Uint32(a[unix.SizeofRtAttr:])), nil
			}
			a = a[min((l+3)&^3, len(a)):]
		}
	}
	return self, 0, nil
}
