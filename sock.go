//go:build linux

package gatenet

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// Making a socket, as net's sock_posix.go: socket(2), default options,
// Control, then bind and listen(2), or connect(2) (fd.go), and the
// kernel's capabilities that decide how.

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
	fd.pfd.MarkPrivate() // socket(2) made it non-blocking; Control, if set, hands it out
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
	switch {
	case sotype == unix.SOCK_DGRAM:
		fd.bubbleDatagram(raddr)
	case raddr == nil:
		fd.bubbleListening()
	default:
		fd.bubbleConnected(raddr)
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
		if err := poll.Bind(s, lsa); err != nil {
			return os.NewSyscallError("bind", err)
		}
	}
	backlog := listenerBacklog()
	if cfg.backlog > 0 {
		backlog = maxAckBacklog(cfg.backlog)
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
		if err := poll.Bind(fd.pfd.Sysfd, lsa); err != nil {
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
			if err := poll.Bind(fd.pfd.Sysfd, lsa); err != nil {
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
		if fd.sotype == unix.SOCK_STREAM {
			fd.placeBesidePeer(raddr)
		}
		fd.learnLocalIfFaulted()
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

// listenerBacklog reads net.core.somaxconn once, as net's
// maxListenerBacklog does.
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
		return maxAckBacklog(n)
	}
	return n
})

// maxAckBacklog caps a backlog at what the kernel's field holds, as net's:
// 16 bits before Linux 4.1, 32 after. listen(2) reads an int, and the
// kernel compares it unsigned with somaxconn, so any value past the cap
// means somaxconn; a larger Go int would lose its high bits instead
// (1<<32 would be a backlog of 0).
func maxAckBacklog(n int) int {
	if limit := ackBacklogLimit(); uint(n) > limit {
		return int(limit)
	}
	return n
}

var ackBacklogLimit = sync.OnceValue(func() uint {
	if kernelVersionAtLeast(4, 1) {
		return 1<<32 - 1
	}
	return 1<<16 - 1
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
		if err != nil {
			return false
		}
		err = unix.Bind(s, sa)
		return err == nil || ipv6ProbeDeniedIsSupport && (err == unix.EPERM || err == unix.EACCES)
	}
	caps.ipv6 = probe(net.IPv6loopback, 1)
	caps.ipv4map = probe(net.IPv4(127, 0, 0, 1), 0)
	return caps
})

func supportsIPv4() bool { return ipStack().ipv4 }

func supportsIPv4map() bool { return ipStack().ipv4map }

// Socket types, named for the parsers.
const (
	sockStream    = unix.SOCK_STREAM
	sockDgram     = unix.SOCK_DGRAM
	sockSeqpacket = unix.SOCK_SEQPACKET
)
