//go:build linux

package gatenet

import (
	"context"
	"encoding/binary"
	"math/bits"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// The socket descriptor, as net's fd_unix.go: netFD, its creation with
// default options, connect, accept, shutdown and close. Making a socket
// for a listener or a dial is sock.go's.

// netFD is a socket: the descriptor plus what net's netFD keeps beside it.
type netFD struct {
	pfd poll.FD // in place, first (its finalizer needs that): one allocation per socket

	// family to inheritShard fill one word, so that a netFD is 96 bytes
	// (an idle server holds one per connection).
	family int16
	sotype int16

	isConnected bool // dialed with a peer address: WriteTo is refused (net's rule)

	// lazyLocal: the local address is learnt when first asked for
	// (localaddr.go), not at accept or connect.
	lazyLocal bool

	// inheritShard: accepted connections go on this listener's poller
	// shard (ListenGroup), instead of being spread.
	inheritShard bool

	// bubbleDgram: a datagram socket of a synctest bubble, whose sends
	// wake the bubble's readers they reach (synctest_dgram.go).
	bubbleDgram bool

	net   string       // the network the caller named ("tcp", "unix", …)
	laddr atomic.Value // the local net.Addr; read it with localAddr
	raddr net.Addr
}

// newNetFD registers a socket with the poller. For sockets, unlike
// files, a registration failure is fatal (net's netFD.init).
func newNetFD(sysfd, family, sotype int, network string, p *pollfd.Poller, shard int) (*netFD, error) {
	if p == nil {
		p = pollfd.Default()
	}
	fd := &netFD{family: int16(family), sotype: int16(sotype), net: network}
	if err := fd.pfd.InitSocket(sysfd, sotype, p, shard); err != nil {
		fd.pfd.Close()
		return nil, err
	}
	if err := attachEnvFaults(&fd.pfd); err != nil {
		fd.pfd.Close()
		return nil, err
	}
	return fd, nil
}

// sysSocket wraps socket(2) with SOCK_NONBLOCK|SOCK_CLOEXEC.
func sysSocket(family, sotype, proto int) (int, error) {
	s, err := unix.Socket(family, sotype|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	return s, nil
}

// setDefaultSockopts is net's: IPV6_V6ONLY as chosen (error ignored, as
// net does), SO_BROADCAST on IP datagram sockets.
func setDefaultSockopts(s, family, sotype int, ipv6only bool) error {
	if family == unix.AF_INET6 && sotype != unix.SOCK_RAW {
		unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, boolint(ipv6only))
	}
	if (sotype == unix.SOCK_DGRAM || sotype == unix.SOCK_RAW) && family != unix.AF_UNIX {
		return os.NewSyscallError("setsockopt", unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_BROADCAST, 1))
	}
	return nil
}

func boolint(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (fd *netFD) addr(sa unix.Sockaddr) net.Addr { return sockaddrToAddr(int(fd.sotype), fd.net, sa) }

// aLongTimeAgo is a deadline in the past, used to interrupt a connect.
var aLongTimeAgo = time.Unix(1, 0)

// connect is non-blocking connect(2): EINPROGRESS, then wait for
// writability and read SO_ERROR, honouring ctx's deadline and
// cancellation. It mirrors net's netFD.connect, and like it returns the
// peer's address when it had to ask for it (nil otherwise).
func (fd *netFD) connect(ctx context.Context, ra unix.Sockaddr) (peer unix.Sockaddr, ret error) {
	pfd := &fd.pfd
	// Fail fast if closing, and forget any earlier edge: the wait below is
	// for the connect's own.
	if err := pfd.Prepare(pollfd.ModeWrite); err != nil {
		return nil, err
	}
	err := pfd.DialFault()
	switch {
	case err == poll.ErrDialHang:
		// The SYN is lost: wait for the deadline or cancellation, as for
		// a real connect that never completes.
		<-ctx.Done()
		return nil, mapContextErr(ctx.Err())
	case err == nil:
		err = poll.Connect(pfd.Sysfd, ra)
	}
	switch err {
	case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
	case nil, unix.EISCONN:
		if ctx.Err() != nil {
			return nil, mapContextErr(ctx.Err())
		}
		return nil, nil
	default:
		return nil, os.NewSyscallError("connect", err)
	}
	// A connect to this host has usually finished inside connect(2),
	// though it reported EINPROGRESS: look once (SO_ERROR, then the peer,
	// the two calls the wait's end makes anyway) before arming the
	// deadline and parking, where a park costs a wake-up and a trip
	// through the drain loop.
	if peer, done, err := connectResult(pfd.Sysfd); done {
		if err == nil && ctx.Err() != nil {
			return nil, mapContextErr(ctx.Err())
		}
		return peer, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		pfd.SetDeadline(deadline, pollfd.ModeWrite)
		defer pfd.SetDeadline(time.Time{}, pollfd.ModeWrite)
	}
	// Cancellation interrupts the wait by moving the write deadline into
	// the past; if that happened, or is happening, the context's error is
	// the answer even when connect won the race (the write deadline may be
	// poisoned), as net's. Nothing waits for the callback: it may run
	// outside a synctest bubble the dial is in, where closing a channel
	// made in the bubble is fatal; ctx.Err() is set before it starts.
	stop := context.AfterFunc(ctx, func() { pfd.SetDeadline(aLongTimeAgo, pollfd.ModeWrite) })
	defer func() {
		if !stop() && (ret == nil || ret == os.ErrDeadlineExceeded) {
			ret = mapContextErr(ctx.Err())
		}
	}()
	for {
		if err := pfd.Wait(pollfd.ModeWrite); err != nil {
			if ctx.Err() != nil {
				return nil, mapContextErr(ctx.Err())
			}
			return nil, err
		}
		if peer, done, err := connectResult(pfd.Sysfd); done {
			return peer, err
		}
		// Not finished: a spurious wake-up.
	}
}

// connectResult reports whether the non-blocking connect on fd has
// finished and how: getsockopt(SO_ERROR) for a failure, then
// getpeername(2), since SO_ERROR is 0 also while the handshake is still
// in flight and only a peer name proves it is done. peer is the peer's
// address when it was learnt.
func connectResult(fd int) (peer unix.Sockaddr, done bool, err error) {
	nerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err != nil {
		return nil, true, os.NewSyscallError("getsockopt", err)
	}
	switch e := syscall.Errno(nerr); e {
	case unix.EINPROGRESS, unix.EALREADY, unix.EINTR:
		return nil, false, nil
	case unix.EISCONN:
		return nil, true, nil
	case 0:
		if peer, err := getpeername(fd); err == nil {
			return peer, true, nil
		}
		return nil, false, nil
	default:
		return nil, true, os.NewSyscallError("connect", e)
	}
}

// Close closes the socket, learning its local address first if it is
// still to be learnt (localaddr.go).
func (fd *netFD) Close() error {
	if fd.lazyLocal {
		fd.localAddr()
	}
	if fd.pfd.InBubble() {
		fd.bubbleForget()
	}
	return fd.pfd.Close()
}

// shutdown wraps shutdown(2).
func (fd *netFD) shutdown(how int) error { return fd.pfd.Shutdown(how) }

// accept takes one connection (accept4(2)), waiting no longer than ctx
// allows.
func (fd *netFD) accept(ctx context.Context) (*netFD, error) {
	var raw unix.RawSockaddrAny
	s, call, err := fd.pfd.AcceptContext(ctx, &raw)
	if err != nil {
		return nil, wrapSyscallError(call, err)
	}
	rsa, err := acceptedSockaddr(s, &raw)
	if err != nil {
		return nil, wrapSyscallError("accept4", err)
	}
	nfd, err := fd.newAccepted(s, rsa)
	if err == nil && fd.pfd.InBubble() {
		nfd.bubbleConnected(nil)
	}
	return nfd, err
}

// newAccepted wraps an accepted socket as one of the listener's kind, on
// the listener's poller: on the listener's shard (ListenGroup), or on the
// shard its dialling end's address names (placeBesidePeer).
func (fd *netFD) newAccepted(s int, rsa unix.Sockaddr) (*netFD, error) {
	p := fd.pfd.Desc().Poller()
	shard := poll.AnyShard
	if fd.inheritShard {
		shard = fd.pfd.Desc().Shard()
	} else if p.Shards() > 1 && fd.sotype == unix.SOCK_STREAM {
		if key, ok := dialerKey(rsa); ok {
			shard = p.ShardFor(key)
		}
	}
	nfd, err := newNetFD(s, int(fd.family), int(fd.sotype), fd.net, p, shard)
	if err != nil {
		return nil, err
	}
	nfd.pfd.MarkPrivate() // accept4(2) made it non-blocking
	if f := fd.pfd.Faults(); f != nil {
		if err := nfd.pfd.SetFaults(f); err != nil {
			nfd.Close()
			return nil, err
		}
	}
	nfd.raddr = nfd.addr(rsa)
	nfd.lazyLocal = true // getsockname(2) when asked (localaddr.go)
	nfd.learnLocalIfFaulted()
	return nfd, nil
}

// placeBesidePeer moves a dialled TCP socket to the poller shard that its
// peer's accept, if the peer is this process's, puts the other end on:
// the shard the dialling end's address names (dialerKey), which accept
// learns from accept4(2) and the dialler from getsockname(2). A hop
// between two ends of one shard is carried by its waiters' harvests,
// without a drain loop's wake-up (pollfd/place.go). Only a peer on a
// loopback address can be this process's, and only a poller of several
// shards has a choice; the address it learns is the one LocalAddr returns
// and the one the dial's self-connect check reads (dial.go). The socket stays where it is if its
// connect had to wait (it is in the epoll set by then), and in a synctest
// bubble.
func (fd *netFD) placeBesidePeer(raddr net.Addr) {
	pd := fd.pfd.Desc()
	ta, ok := raddr.(*net.TCPAddr)
	if pd == nil || !ok || !ta.IP.IsLoopback() || pd.Poller().Shards() == 1 || fd.pfd.InBubble() {
		return
	}
	lsa, err := getsockname(fd.pfd.Sysfd)
	if err != nil {
		return
	}
	key, ok := dialerKey(lsa)
	if !ok {
		return
	}
	fd.setLocalAddr(fd.addr(lsa))
	fd.pfd.MoveToShard(pd.Poller().ShardFor(key))
}

// dialerKey is the placement key of a TCP connection: its dialling end's
// address and port, an IPv4 address in its IPv4-mapped form, so that a
// dual-stack listener's accept and an IPv4 dialler agree.
func dialerKey(sa unix.Sockaddr) (uint64, bool) {
	var a [16]byte
	var port int
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		a[10], a[11] = 0xff, 0xff
		copy(a[12:], sa.Addr[:])
		port = sa.Port
	case *unix.SockaddrInet6:
		a, port = sa.Addr, sa.Port
	default:
		return 0, false
	}
	hi, lo := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	return hi ^ bits.RotateLeft64(lo, 16) ^ uint64(port), true
}

// dupOf duplicates f's descriptor with F_DUPFD_CLOEXEC, under f's own
// reference (RawConn.Control), for taking over a descriptor another
// package owns: FileConn's *os.File, os/exec's pipe end.
func dupOf(f *os.File) (int, error) {
	// A nil or closed f fails as net's dup of f.Fd() does: fcntl(2) of
	// the -1 that Fd returns then, EBADF.
	closed := func() error { return os.NewSyscallError("fcntl", unix.EBADF) }
	rc, err := f.SyscallConn()
	if err != nil {
		return -1, closed()
	}
	nfd := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		nfd, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return -1, closed()
	}
	if dupErr != nil {
		return -1, os.NewSyscallError("fcntl", dupErr)
	}
	return nfd, nil
}
