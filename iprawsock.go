//go:build linux

package gatenet

import (
	"context"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// IPConn is a raw IP socket ("ip4:icmp", "ip6:58", …: socket(2) with
// SOCK_RAW and the protocol) with the method set of *net.IPConn. Making
// one needs CAP_NET_RAW, as with net.
type IPConn struct {
	conn
}

func newIPConn(fd *netFD) *IPConn { return &IPConn{conn{fd}} }

func (c *IPConn) opError(op string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.localAddr(), Addr: addr, Err: err}
}

// ipAddrOf converts a sender address; nil for none.
func ipAddrOf(sa unix.Sockaddr) *net.IPAddr {
	a, _ := sockaddrToAddr(unix.SOCK_RAW, "", sa).(*net.IPAddr)
	return a
}

// ReadFromIP reads one packet and its sender (recvfrom(2)), as net's: on
// IPv4 the kernel hands over the IP header too, and it is stripped from b
// (IPv6 raw sockets never see theirs).
func (c *IPConn) ReadFromIP(b []byte) (int, *net.IPAddr, error) {
	if !c.ok() {
		return 0, nil, syscall.EINVAL
	}
	n, sa, err := c.fd.pfd.ReadFrom(b)
	if err != nil {
		return n, nil, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
	}
	if _, ok := sa.(*unix.SockaddrInet4); ok {
		n = stripIPv4Header(n, b)
	}
	return n, ipAddrOf(sa), nil
}

// stripIPv4Header removes the IPv4 header at the start of b[:n], as net's:
// left alone unless it looks like one (version 4, a length between 20
// bytes and len(b)).
func stripIPv4Header(n int, b []byte) int {
	if len(b) < 20 {
		return n
	}
	l := int(b[0]&0x0f) << 2
	if 20 > l || l > len(b) {
		return n
	}
	if b[0]>>4 != 4 {
		return n
	}
	copy(b, b[l:])
	return n - l
}

// ReadFrom implements net.PacketConn: ReadFromIP with the sender as a
// net.Addr (an untyped nil when there is none).
func (c *IPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromIP(b)
	if addr == nil {
		return n, nil, err
	}
	return n, addr, err
}

// ReadMsgIP reads a packet with its ancillary data (recvmsg(2)); unlike
// ReadFromIP it leaves an IPv4 header in b, as net's.
func (c *IPConn) ReadMsgIP(b, oob []byte) (n, oobn, flags int, addr *net.IPAddr, err error) {
	if !c.ok() {
		return 0, 0, 0, nil, syscall.EINVAL
	}
	var sa unix.Sockaddr
	n, oobn, flags, sa, err = c.fd.pfd.ReadMsg(b, oob, 0)
	addr = ipAddrOf(sa)
	if err != nil {
		err = c.opError("read", c.fd.raddr, wrapSyscallError("recvmsg", err))
	}
	return n, oobn, flags, addr, err
}

// WriteToIP sends b to addr as one packet (sendto(2)); the kernel adds the
// IP header. On a connected socket it fails with net.ErrWriteToConnected.
func (c *IPConn) WriteToIP(b []byte, addr *net.IPAddr) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	var n int
	sa, err := c.destination(addr)
	if err == nil {
		n, err = c.fd.pfd.WriteTo(b, sa)
		err = wrapSyscallError("sendto", err)
	}
	if err != nil {
		return n, c.opError("write", opAddr(addr), err)
	}
	return n, nil
}

// destination is where WriteToIP and WriteMsgIP send: refused on a
// connected socket or without an address, as net's.
func (c *IPConn) destination(addr *net.IPAddr) (unix.Sockaddr, error) {
	switch {
	case c.fd.isConnected:
		return nil, net.ErrWriteToConnected
	case addr == nil:
		return nil, errMissingAddress
	}
	return addrToSockaddr(int(c.fd.family), addr)
}

// WriteTo implements net.PacketConn: WriteToIP for a *net.IPAddr, and
// EINVAL for any other address, as net's.
func (c *IPConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	a, ok := addr.(*net.IPAddr)
	if !ok {
		return 0, c.opError("write", addr, syscall.EINVAL)
	}
	return c.WriteToIP(b, a)
}

// WriteMsgIP sends a packet with ancillary data (sendmsg(2)) to addr, on
// an unconnected socket.
func (c *IPConn) WriteMsgIP(b, oob []byte, addr *net.IPAddr) (n, oobn int, err error) {
	if !c.ok() {
		return 0, 0, syscall.EINVAL
	}
	sa, err := c.destination(addr)
	if err == nil {
		n, oobn, err = c.fd.pfd.WriteMsg(b, oob, sa)
		err = wrapSyscallError("sendmsg", err)
	}
	if err != nil {
		return n, oobn, c.opError("write", opAddr(addr), err)
	}
	return n, oobn, nil
}

// ListenIP is net.ListenIP: a raw socket for network ("ip4:1", "ip6:ipv6-icmp",
// …) bound to laddr, unconnected (socket(2), bind(2)).
func ListenIP(network string, laddr *net.IPAddr) (*IPConn, error) {
	if laddr == nil {
		laddr = &net.IPAddr{}
	}
	var lc ListenConfig
	c, err := lc.listenIP(context.Background(), network, laddr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: err}
	}
	return c, nil
}

func (lc *ListenConfig) listenIP(ctx context.Context, network string, laddr *net.IPAddr) (*IPConn, error) {
	n, err := parseNetwork(network)
	if err != nil {
		return nil, err
	}
	if n.sotype != unix.SOCK_RAW {
		return nil, net.UnknownNetworkError(network)
	}
	family, ipv6only := favoriteAddrFamily(n.afnet, laddr, nil, true)
	fd, err := socket(ctx, n.afnet, family, unix.SOCK_RAW, n.proto, ipv6only, laddr, nil, lc.socketConfig())
	if err != nil {
		return nil, err
	}
	return newIPConn(fd), nil
}

// DialIP is net.DialIP: a raw socket connected to raddr (socket(2),
// connect(2)).
func DialIP(network string, laddr, raddr *net.IPAddr) (*IPConn, error) {
	var d Dialer
	return dialTyped(context.Background(), network, true, laddr, raddr, d.dialIP)
}

// DialIP is DialTCP (Go 1.26) for a raw IP network: the Dialer's Timeout
// and Deadline bound ctx; a zero laddr lets the kernel choose.
func (d *Dialer) DialIP(ctx context.Context, network string, laddr, raddr netip.Addr) (*IPConn, error) {
	ctx, cancel := d.dialCtx(ctx)
	defer cancel()
	return dialTyped(ctx, network, true, ipAddrFromAddr(laddr), ipAddrFromAddr(raddr), d.dialIP)
}

// ipAddrFromAddr is net's: the zero Addr is an IPAddr with a nil IP (the
// wildcard), not a nil one.
func ipAddrFromAddr(a netip.Addr) *net.IPAddr {
	return &net.IPAddr{IP: a.AsSlice(), Zone: a.Zone()}
}

func (d *Dialer) dialIP(ctx context.Context, network string, laddr, raddr *net.IPAddr) (*IPConn, error) {
	n, err := parseNetwork(network)
	if err != nil {
		return nil, err
	}
	if n.sotype != unix.SOCK_RAW {
		return nil, net.UnknownNetworkError(network)
	}
	var la net.Addr
	if laddr != nil {
		la = laddr
	}
	family, ipv6only := favoriteAddrFamily(n.afnet, la, raddr, false)
	fd, err := socket(ctx, n.afnet, family, unix.SOCK_RAW, n.proto, ipv6only, la, raddr, d.socketConfig())
	if err != nil {
		return nil, err
	}
	return newIPConn(fd), nil
}
