//go:build linux

package gatenet

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

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

// socketConfig is what socket needs beyond the addresses.
type socketConfig struct {
	poller  *pollfd.Poller
	shard   int // poll.AnyShard, or the poller shard to register on
	control func(ctx context.Context, network, address string, c syscall.RawConn) error
	backlog int
	faults  *faults.Faults // nil: GATENET_FAULTS's (newNetFD attached them)
}

// socket creates a socket and either listens on laddr (raddr nil) or dials
// raddr, as net's socket() does.
func socket(ctx context.Context, network string, family, sotype, proto int, ipv6only bool, laddr, raddr net.Addr, cfg socketConfig) (*netFD, error) {
	s, err := sysSocket(family, sotype, proto)
	if err != nil {
		return nil, err
	}
	if err := setDefaultSockopts(s, family, sotype, ipv6only); err != nil {
		unix.Close(s)
		return nil, err
	}
	fd, err := newNetFD(s, family, sotype, network, cfg.poller, cfg.shard)
	if err != nil {
		return nil, err
	}
	if cfg.faults != nil {
		if err := fd.pfd.SetFaults(cfg.faults); err != nil {
			fd.Close()
			return nil, err
		}
	}
	switch {
	case laddr != nil && raddr == nil && (sotype == unix.SOCK_STREAM || sotype == unix.SOCK_SEQPACKET):
		err = fd.listenStream(ctx, laddr, cfg)
	case laddr != nil && raddr == nil && sotype == unix.SOCK_DGRAM:
		err = fd.listenDatagram(ctx, laddr, cfg)
	default: // a dial, or a raw socket bound to laddr (net's rule)
		err = fd.dial(ctx, laddr, raddr, cfg)
	}
	if err != nil {
		fd.Close()
		return nil, err
	}
	return fd, nil
}

// ctrlNetwork is the network string net hands to Control functions:
// "tcp4" or "tcp6" (likewise udp) for an IP socket named without a family.
func (fd *netFD) ctrlNetwork() string {
	switch fd.net {
	case "unix", "unixgram", "unixpacket":
		return fd.net
	}
	switch fd.net[len(fd.net)-1] {
	case '4', '6':
		return fd.net
	}
	if fd.family == unix.AF_INET {
		return fd.net + "4"
	}
	return fd.net + "6"
}

func (fd *netFD) control(ctx context.Context, cfg socketConfig, addr net.Addr) error {
	if cfg.control == nil {
		return nil
	}
	s := ""
	if addr != nil {
		s = addr.String()
	}
	return cfg.control(ctx, fd.ctrlNetwork(), s, newRawConn(fd))
}

func (fd *netFD) addr(sa unix.Sockaddr) net.Addr { return sockaddrToAddr(int(fd.sotype), fd.net, sa) }

// listenStream: SO_REUSEADDR (on every stream listener, Unix ones
// included, as net's setDefaultListenerSockopts), Control, bind, listen.
func (fd *netFD) listenStream(ctx context.Context, laddr net.Addr, cfg socketConfig) error {
	s := fd.pfd.Sysfd
	if err := unix.SetsockoptInt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	lsa, err := addrToSockaddr(int(fd.family), laddr)
	if err != nil {
		return err
	}
	if lsa == nil && fd.family == unix.AF_UNIX {
		// An empty name: net binds it anyway, so the kernel autobinds
		// an abstract name ("@1a2b3"); listen(2) on an unbound Unix
		// socket would fail with EINVAL.
		lsa = &unix.SockaddrUnix{}
	}
	if err := fd.control(ctx, cfg, laddr); err != nil {
		return err
	}
	if lsa != nil {
		if err := unix.Bind(s, lsa); err != nil {
			return os.NewSyscallError("bind", err)
		}
	}
	backlog := cfg.backlog
	if backlog <= 0 {
		backlog = listenerBacklog()
	}
	if err := unix.Listen(s, backlog); err != nil {
		return os.NewSyscallError("listen", err)
	}
	lsa, _ = getsockname(s)
	fd.setLocalAddr(fd.addr(lsa))
	return nil
}

// listenDatagram: SO_REUSEADDR for multicast is left to callers; Control,
// then bind.
func (fd *netFD) listenDatagram(ctx context.Context, laddr net.Addr, cfg socketConfig) error {
	// A multicast group address listens on the wildcard address with a
	// reusable port, as net does, so several listeners can share a group.
	if ua, ok := laddr.(*net.UDPAddr); ok && ua.IP.IsMulticast() {
		if err := unix.SetsockoptInt(fd.pfd.Sysfd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
		wild := *ua
		wild.IP = net.IPv4zero
		if fd.family == unix.AF_INET6 {
			wild.IP = net.IPv6unspecified
		}
		laddr = &wild
	}
	lsa, err := addrToSockaddr(int(fd.family), laddr)
	if err != nil {
		return err
	}
	if lsa == nil && fd.family == unix.AF_UNIX {
		lsa = &unix.SockaddrUnix{} // autobind, as listenStream
	}
	if err := fd.control(ctx, cfg, laddr); err != nil {
		return err
	}
	if lsa != nil {
		if err := unix.Bind(fd.pfd.Sysfd, lsa); err != nil {
			return os.NewSyscallError("bind", err)
		}
	}
	lsa, _ = getsockname(fd.pfd.Sysfd)
	fd.setLocalAddr(fd.addr(lsa))
	return nil
}

// dial: Control, bind laddr if given, connect.
func (fd *netFD) dial(ctx context.Context, laddr, raddr net.Addr, cfg socketConfig) error {
	ctrlAddr := raddr // Control sees the peer, or the local address without one
	if ctrlAddr == nil {
		ctrlAddr = laddr
	}
	if err := fd.control(ctx, cfg, ctrlAddr); err != nil {
		return err
	}
	if laddr != nil {
		lsa, err := addrToSockaddr(int(fd.family), laddr)
		if err != nil {
			return err
		}
		if lsa != nil {
			if err := unix.Bind(fd.pfd.Sysfd, lsa); err != nil {
				return os.NewSyscallError("bind", err)
			}
		}
	}
	var peer unix.Sockaddr // learnt by connect, when it had to wait
	if raddr != nil {
		rsa, err := addrToSockaddr(int(fd.family), raddr)
		if err != nil {
			return err
		}
		if peer, err = fd.connect(ctx, rsa); err != nil {
			return err
		}
		fd.isConnected = true
	}
	if fd.isConnected && fd.sotype != unix.SOCK_DGRAM && fd.sotype != unix.SOCK_RAW {
		fd.lazyLocal = true // fixed by the connect: learnt when asked (localaddr.go)
	} else {
		lsa, _ := getsockname(fd.pfd.Sysfd)
		fd.setLocalAddr(fd.addr(lsa))
	}
	// The remote address is the peer the kernel reports or, failing that
	// (a UDP "connect" to port 0), the address as resolved, as net does.
	fd.raddr = raddr
	if peer == nil {
		peer, _ = getpeername(fd.pfd.Sysfd)
	}
	if peer != nil {
		fd.raddr = fd.addr(peer)
	}
	return nil
}

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
	var err error
	switch e, hang := pfd.DialFault(); {
	case e != 0:
		err = e
	case hang:
		// The SYN is lost: wait for the deadline or cancellation, as for
		// a real connect that never completes.
		<-ctx.Done()
		return nil, mapContextErr(ctx.Err())
	default:
		err = unix.Connect(pfd.Sysfd, ra)
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
	// the past; if that happened, the context's error is the answer even
	// when connect won the race.
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		pfd.SetDeadline(aLongTimeAgo, pollfd.ModeWrite)
		close(interrupted)
	})
	defer func() {
		if !stop() {
			<-interrupted
			if ret == nil || ret == os.ErrDeadlineExceeded {
				ret = mapContextErr(ctx.Err())
			}
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
	return fd.pfd.Close()
}

// shutdown wraps shutdown(2).
func (fd *netFD) shutdown(how int) error {
	if err := fd.pfd.Incref(); err != nil {
		return err
	}
	defer fd.pfd.Decref()
	return os.NewSyscallError("shutdown", unix.Shutdown(fd.pfd.Sysfd, how))
}

// accept takes one connection and wraps it as a socket of the listener's
// kind on the listener's poller.
func (fd *netFD) accept() (*netFD, error) { return fd.acceptContext(context.Background()) }

// newAccepted wraps an accepted socket as one of the listener's kind, on
// the listener's poller.
func (fd *netFD) newAccepted(s int, rsa unix.Sockaddr) (*netFD, error) {
	shard := poll.AnyShard
	if fd.inheritShard {
		shard = fd.pfd.Desc().Shard()
	}
	nfd, err := newNetFD(s, int(fd.family), int(fd.sotype), fd.net, fd.pfd.Desc().Poller(), shard)
	if err != nil {
		return nil, err
	}
	if f := fd.pfd.Faults(); f != nil {
		if err := nfd.pfd.SetFaults(f); err != nil {
			nfd.Close()
			return nil, err
		}
	}
	nfd.raddr = nfd.addr(rsa)
	nfd.lazyLocal = true // getsockname(2) when asked (localaddr.go)
	return nfd, nil
}

// listenerBacklog reads net.core.somaxconn once, as net does (capped to
// what listen(2)'s int and the kernel's u16 field allow).
var listenerBacklog = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return unix.SOMAXCONN
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n == 0 {
		return unix.SOMAXCONN
	}
	if n > 1<<16-1 {
		n = 1<<16 - 1
	}
	return n
})

// The IP stack's capabilities, probed once as net's ipStackCapabilities.
var ipStack = sync.OnceValue(func() (caps struct{ ipv4, ipv6, ipv4map bool }) {
	if s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP); err == nil {
		unix.Close(s)
		caps.ipv4 = true
	}
	probe := func(ip net.IP, v6only int) bool {
		s, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
		if err != nil {
			return false
		}
		defer unix.Close(s)
		unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, v6only)
		sa, err := ipToSockaddr(unix.AF_INET6, ip, 0, "")
		return err == nil && unix.Bind(s, sa) == nil
	}
	caps.ipv6 = probe(net.IPv6loopback, 1)
	caps.ipv4map = probe(net.IPv4(127, 0, 0, 1), 0)
	return caps
})

func supportsIPv4() bool    { return ipStack().ipv4 }
func supportsIPv4map() bool { return ipStack().ipv4map }

// Socket types, named for the parsers.
const (
	sockStream    = unix.SOCK_STREAM
	sockDgram     = unix.SOCK_DGRAM
	sockSeqpacket = unix.SOCK_SEQPACKET
)
