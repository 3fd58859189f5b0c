//go:build linux

package gatenet

import (
	"context"
	"errors"
	"net"
	"net/http/httptrace"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
)

// Dial connects to address on network, as net.Dial. Networks: "tcp",
// "tcp4", "tcp6", "udp", "udp4", "udp6", "unix", "unixgram", "unixpacket",
// and raw IP with a protocol, "ip4:1" or "ip6:ipv6-icmp" (an address
// without a port; CAP_NET_RAW needed).
func Dial(network, address string) (net.Conn, error) {
	var d Dialer
	return d.Dial(network, address)
}

// DialTimeout is Dial with a timeout, as net.DialTimeout.
func DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	d := Dialer{Timeout: timeout}
	return d.Dial(network, address)
}

// Dial connects to address on network.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext connects to address on network, honouring ctx's deadline
// and cancellation at every step (resolution, each connect). A "tcp" dial
// to a name with both IPv4 and IPv6 addresses races the two families, as
// net does; each address of a family is tried in turn with a share of the
// remaining time.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ctx, cancel := d.dialCtx(ctx)
	defer cancel()
	n, err := parseNetwork(network)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	addrs, err := resolveAddrList(resolveContext(ctx), d.Resolver, "dial", n, address, d.LocalAddr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	var primaries, fallbacks addrList
	if d.FallbackDelay >= 0 && network == "tcp" {
		primaries, fallbacks = addrs.partition(isIPv4)
	} else {
		primaries = addrs
	}
	return d.dialParallel(ctx, network, primaries, fallbacks)
}

// dialCtx is ctx bounded by the Dialer's Timeout and Deadline, and ended
// by its Cancel channel, as net's. A nil ctx panics, as in net: it is a
// programming error.
func (d *Dialer) dialCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		panic("nil context")
	}
	cancel := func() {}
	if deadline := d.deadline(ctx, time.Now()); !deadline.IsZero() {
		if old, ok := ctx.Deadline(); !ok || deadline.Before(old) {
			ctx, cancel = context.WithDeadline(ctx, deadline)
		}
	}
	if oldCancel := d.Cancel; oldCancel != nil {
		sub, cancelSub := context.WithCancel(ctx)
		select {
		case <-oldCancel: // closed already: no dial, where net's goroutine may lose the race to a loopback connect
			cancelSub()
		default:
			go func() {
				select {
				case <-oldCancel:
					cancelSub()
				case <-sub.Done():
				}
			}()
		}
		cancelDeadline := cancel
		ctx, cancel = sub, func() { cancelSub(); cancelDeadline() }
	}
	return ctx, cancel
}

// deadline is the earliest of now+Timeout, Deadline and ctx's deadline.
func (d *Dialer) deadline(ctx context.Context, now time.Time) (earliest time.Time) {
	if d.Timeout != 0 {
		earliest = now.Add(d.Timeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		earliest = minTime(earliest, dl)
	}
	return minTime(earliest, d.Deadline)
}

func minTime(a, b time.Time) time.Time {
	if a.IsZero() {
		return b
	}
	if b.IsZero() || a.Before(b) {
		return a
	}
	return b
}

func (d *Dialer) fallbackDelay() time.Duration {
	if d.FallbackDelay > 0 {
		return d.FallbackDelay
	}
	return 300 * time.Millisecond
}

// dialParallel races primaries against fallbacks started after the
// fallback delay (or as soon as the primaries have all failed); the first
// connection wins and the loser is closed. It is net's dialParallel.
func (d *Dialer) dialParallel(ctx context.Context, network string, primaries, fallbacks addrList) (net.Conn, error) {
	if len(fallbacks) == 0 {
		return d.dialSerial(ctx, network, primaries)
	}
	returned := make(chan struct{})
	defer close(returned)
	type result struct {
		c       net.Conn
		err     error
		primary bool
		done    bool
	}
	results := make(chan result)
	race := func(ctx context.Context, primary bool) {
		ras := primaries
		if !primary {
			ras = fallbacks
		}
		c, err := d.dialSerial(ctx, network, ras)
		select {
		case results <- result{c, err, primary, true}:
		case <-returned:
			if c != nil {
				c.Close()
			}
		}
	}
	var primary, fallback result
	primaryCtx, primaryCancel := context.WithCancel(ctx)
	defer primaryCancel()
	go race(primaryCtx, true)
	fallbackTimer := time.NewTimer(d.fallbackDelay())
	defer fallbackTimer.Stop()
	for {
		select {
		case <-fallbackTimer.C:
			fallbackCtx, fallbackCancel := context.WithCancel(ctx)
			defer fallbackCancel()
			go race(fallbackCtx, false)
		case res := <-results:
			if res.err == nil {
				return res.c, nil
			}
			if res.primary {
				primary = res
			} else {
				fallback = res
			}
			if primary.done && fallback.done {
				return nil, primary.err
			}
			if res.primary && fallbackTimer.Stop() {
				fallbackTimer.Reset(0) // primaries failed: start the fallbacks now
			}
		}
	}
}

// dialSerial tries each address in turn, giving each an equal share of
// the time left (at least 2 s), as net's dialSerial.
func (d *Dialer) dialSerial(ctx context.Context, network string, ras addrList) (net.Conn, error) {
	var firstErr error
	for i, ra := range ras {
		select {
		case <-ctx.Done():
			return nil, &net.OpError{Op: "dial", Net: network, Source: d.LocalAddr, Addr: ra, Err: mapContextErr(ctx.Err())}
		default:
		}
		dialCtx := ctx
		if deadline, ok := ctx.Deadline(); ok {
			partial, err := partialDeadline(time.Now(), deadline, len(ras)-i)
			if err != nil {
				if firstErr == nil {
					firstErr = &net.OpError{Op: "dial", Net: network, Source: d.LocalAddr, Addr: ra, Err: err}
				}
				break
			}
			if partial.Before(deadline) {
				var cancel context.CancelFunc
				dialCtx, cancel = context.WithDeadline(ctx, partial)
				defer cancel()
			}
		}
		c, err := d.dialSingle(dialCtx, network, ra)
		if err == nil {
			return c, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = &net.OpError{Op: "dial", Net: network, Err: errMissingAddress}
	}
	return nil, firstErr
}

// partialDeadline is net's: the deadline for one of addrsRemaining tries.
func partialDeadline(now, deadline time.Time, addrsRemaining int) (time.Time, error) {
	if deadline.IsZero() {
		return deadline, nil
	}
	timeRemaining := deadline.Sub(now)
	if timeRemaining <= 0 {
		return time.Time{}, errTimeout
	}
	timeout := timeRemaining / time.Duration(addrsRemaining)
	const saneMinimum = 2 * time.Second
	if timeout < saneMinimum {
		if timeRemaining < saneMinimum {
			timeout = timeRemaining
		} else {
			timeout = saneMinimum
		}
	}
	return now.Add(timeout), nil
}

// dialSingle connects to one address.
func (d *Dialer) dialSingle(ctx context.Context, network string, ra net.Addr) (c net.Conn, err error) {
	// net/http/httptrace's connect events, which net's dialSingle reports
	// through the same ClientTrace.
	if trace := httptrace.ContextClientTrace(ctx); trace != nil {
		raStr := ra.String()
		if trace.ConnectStart != nil {
			trace.ConnectStart(network, raStr)
		}
		if trace.ConnectDone != nil {
			defer func() { trace.ConnectDone(network, raStr, err) }()
		}
	}
	switch ra := ra.(type) {
	case *net.TCPAddr:
		la, _ := d.LocalAddr.(*net.TCPAddr)
		c, err = d.dialTCP(ctx, network, la, ra)
	case *net.UDPAddr:
		la, _ := d.LocalAddr.(*net.UDPAddr)
		c, err = d.dialUDP(ctx, network, la, ra)
	case *net.UnixAddr:
		la, _ := d.LocalAddr.(*net.UnixAddr)
		c, err = d.dialUnix(ctx, network, la, ra)
	case *net.IPAddr:
		la, _ := d.LocalAddr.(*net.IPAddr)
		c, err = d.dialIP(ctx, network, la, ra)
	default:
		err = &net.AddrError{Err: "unexpected address type", Addr: ra.String()}
	}
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Source: d.LocalAddr, Addr: ra, Err: err}
	}
	return c, nil
}

func (d *Dialer) socketConfig() socketConfig {
	cfg := socketConfig{poller: d.Poller, shard: poll.AnyShard, control: d.ControlContext, faults: d.Faults}
	if cfg.control == nil && d.Control != nil {
		cfg.control = func(_ context.Context, network, address string, c syscall.RawConn) error {
			return d.Control(network, address, c)
		}
	}
	return cfg
}

// dialTCP connects with Multipath TCP first if the Dialer says so and the
// kernel has it, and with plain TCP after any failure of that, as net's
// dialMPTCP.
func (d *Dialer) dialTCP(ctx context.Context, network string, laddr, raddr *net.TCPAddr) (*TCPConn, error) {
	if d.MultipathTCP() && supportsMultipathTCP() {
		if c, err := d.dialTCPProto(ctx, network, laddr, raddr, unix.IPPROTO_MPTCP); err == nil {
			return c, nil
		}
	}
	return d.dialTCPProto(ctx, network, laddr, raddr, 0)
}

func (d *Dialer) dialTCPProto(ctx context.Context, network string, laddr, raddr *net.TCPAddr, proto int) (*TCPConn, error) {
	var la net.Addr
	if laddr != nil {
		la = laddr
	}
	family, ipv6only := favoriteAddrFamily(network, la, raddr, false)
	fd, err := socket(ctx, network, family, sockStream, proto, ipv6only, la, raddr, d.socketConfig())
	// As net's doDialTCPProto: a port the kernel chose can be the closed
	// destination's own, and the connect then succeeds, to itself
	// (go.dev/issue/2690); or it is one in use (a spurious EADDRNOTAVAIL).
	// Either way the socket is closed and dialled again, twice at most.
	for i := 0; i < 2 && (laddr == nil || laddr.Port == 0) && (selfConnect(fd, err) || errors.Is(err, unix.EADDRNOTAVAIL)); i++ {
		if err == nil {
			fd.Close()
		}
		fd, err = socket(ctx, network, family, sockStream, proto, ipv6only, la, raddr, d.socketConfig())
	}
	if err != nil {
		return nil, err
	}
	return newTCPConn(fd, d.KeepAlive, d.KeepAliveConfig), nil
}

// selfConnect reports whether fd, connected without error, is connected
// to itself: its local address is its remote one. It learns the local
// address now (localaddr.go), which Close would otherwise learn later.
func selfConnect(fd *netFD, err error) bool {
	if err != nil {
		return false
	}
	l, _ := fd.localAddr().(*net.TCPAddr)
	r, _ := fd.raddr.(*net.TCPAddr)
	return l == nil || r == nil || l.Port == r.Port && l.IP.Equal(r.IP)
}

func (d *Dialer) dialUnix(ctx context.Context, network string, laddr, raddr *net.UnixAddr) (*UnixConn, error) {
	// net's unixSocket: an unnamed laddr or raddr is none; only a
	// datagram socket bound to laddr may go without raddr (it is left
	// unconnected).
	var la, ra net.Addr
	if laddr != nil && laddr.Name != "" {
		la = laddr
	}
	if raddr != nil && raddr.Name != "" {
		ra = raddr
	}
	sotype := unixSotype(network)
	if ra == nil && (sotype != unix.SOCK_DGRAM || la == nil) {
		return nil, errMissingAddress
	}
	fd, err := socket(ctx, network, unix.AF_UNIX, sotype, 0, false, la, ra, d.socketConfig())
	if err != nil {
		return nil, err
	}
	return newUnixConn(fd), nil
}

// DialTCP is net.DialTCP.
func DialTCP(network string, laddr, raddr *net.TCPAddr) (*TCPConn, error) {
	var d Dialer
	return dialTyped(context.Background(), network, isTCPNetwork(network), laddr, raddr, d.dialTCP)
}

// DialUnix is net.DialUnix.
func DialUnix(network string, laddr, raddr *net.UnixAddr) (*UnixConn, error) {
	var d Dialer
	return dialTyped(context.Background(), network, isUnixNetwork(network), laddr, raddr, d.dialUnix)
}

// DialTCP is Dial for a TCP network with ctx and the addresses as
// netip.AddrPort, as net's (Go 1.26): the Dialer's Timeout and Deadline
// bound ctx, which must not be nil; laddr is the local address, its zero
// value letting the kernel choose (the Dialer's LocalAddr is not used); once
// connected, the end of ctx does not affect the connection.
func (d *Dialer) DialTCP(ctx context.Context, network string, laddr, raddr netip.AddrPort) (*TCPConn, error) {
	ctx, cancel := d.dialCtx(ctx)
	defer cancel()
	return dialTyped(ctx, network, isTCPNetwork(network), net.TCPAddrFromAddrPort(laddr), net.TCPAddrFromAddrPort(raddr), d.dialTCP)
}

// DialUDP is DialTCP for a UDP network: a connected UDP socket.
func (d *Dialer) DialUDP(ctx context.Context, network string, laddr, raddr netip.AddrPort) (*UDPConn, error) {
	ctx, cancel := d.dialCtx(ctx)
	defer cancel()
	return dialTyped(ctx, network, isUDPNetwork(network), net.UDPAddrFromAddrPort(laddr), net.UDPAddrFromAddrPort(raddr), d.dialUDP)
}

// DialUnix is DialTCP for a Unix network ("unix", "unixgram",
// "unixpacket"); laddr nil lets the kernel choose.
func (d *Dialer) DialUnix(ctx context.Context, network string, laddr, raddr *net.UnixAddr) (*UnixConn, error) {
	ctx, cancel := d.dialCtx(ctx)
	defer cancel()
	return dialTyped(ctx, network, isUnixNetwork(network), laddr, raddr, d.dialUnix)
}

// dialTyped is net's dialTCP, dialUDP and dialUnix: the network checked
// (known: it is one the caller takes), raddr required, then dial, with
// every error a *net.OpError of net's shape.
func dialTyped[A interface {
	*net.TCPAddr | *net.UDPAddr | *net.UnixAddr | *net.IPAddr
	net.Addr
}, C any](ctx context.Context, network string, known bool, laddr, raddr A, dial func(context.Context, string, A, A) (C, error)) (C, error) {
	var none C
	if !known {
		return none, &net.OpError{Op: "dial", Net: network, Source: opAddr(laddr), Addr: opAddr(raddr), Err: net.UnknownNetworkError(network)}
	}
	if _, isUnix := any(raddr).(*net.UnixAddr); raddr == nil && !isUnix { // dialUnix decides for Unix
		return none, &net.OpError{Op: "dial", Net: network, Source: opAddr(laddr), Err: errMissingAddress}
	}
	c, err := dial(ctx, network, laddr, raddr)
	if err != nil {
		return none, &net.OpError{Op: "dial", Net: network, Source: opAddr(laddr), Addr: opAddr(raddr), Err: err}
	}
	return c, nil
}

func isTCPNetwork(network string) bool {
	return network == "tcp" || network == "tcp4" || network == "tcp6"
}

func isUDPNetwork(network string) bool {
	return network == "udp" || network == "udp4" || network == "udp6"
}

func isUnixNetwork(network string) bool {
	return network == "unix" || network == "unixgram" || network == "unixpacket"
}
