//go:build linux

package gatenet

import (
	"context"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// UDPConn is a UDP socket with the method set of *net.UDPConn. A read
// never merges or splits datagrams; a zero-length datagram reads as
// n == 0 with a nil error, as with net.
type UDPConn struct {
	conn
}

func newUDPConn(fd *netFD) *UDPConn { return &UDPConn{conn{fd}} }

func (c *UDPConn) opError(op string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.laddr, Addr: addr, Err: err}
}

// udpAddrOf converts a sender address; nil for none.
func (c *UDPConn) udpAddrOf(sa unix.Sockaddr) *net.UDPAddr {
	a, _ := sockaddrToAddr(unix.SOCK_DGRAM, c.fd.net, sa).(*net.UDPAddr)
	return a
}

// ReadFromUDP reads one datagram and its sender (recvfrom(2)). Unlike
// Read, a nil or empty b still consumes a datagram.
func (c *UDPConn) ReadFromUDP(b []byte) (int, *net.UDPAddr, error) {
	if !c.ok() {
		return 0, nil, syscall.EINVAL
	}
	n, sa, err := c.fd.pfd.ReadFrom(b)
	if err != nil {
		return n, nil, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
	}
	return n, c.udpAddrOf(sa), nil
}

// ReadFrom implements net.PacketConn.
func (c *UDPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromUDP(b)
	if addr == nil {
		return n, nil, err
	}
	return n, addr, err
}

// ReadFromUDPAddrPort is ReadFromUDP returning a netip.AddrPort.
// It converts the sender straight from the kernel's address, with no
// *net.UDPAddr in between.
func (c *UDPConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	if !c.ok() {
		return 0, netip.AddrPort{}, syscall.EINVAL
	}
	n, sa, err := c.fd.pfd.ReadFrom(b)
	if err != nil {
		return n, netip.AddrPort{}, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
	}
	return n, sockaddrAddrPort(c.fd.family, sa), nil
}

// sockaddrAddrPort converts a sender address as net's UDP code does: the
// socket family decides, and a missing or foreign address reads as that
// family's zero address.
func sockaddrAddrPort(family int, sa unix.Sockaddr) netip.AddrPort {
	switch family {
	case unix.AF_INET:
		var ip [4]byte
		var port int
		if sa, ok := sa.(*unix.SockaddrInet4); ok {
			ip, port = sa.Addr, sa.Port
		}
		return netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(port))
	case unix.AF_INET6:
		var ip [16]byte
		var port int
		var zone uint32
		if sa, ok := sa.(*unix.SockaddrInet6); ok {
			ip, port, zone = sa.Addr, sa.Port, sa.ZoneId
		}
		return netip.AddrPortFrom(netip.AddrFrom16(ip).WithZone(zoneName(zone)), uint16(port))
	}
	return netip.AddrPort{}
}

// ReadMsgUDP reads a datagram with its ancillary data (recvmsg(2));
// flags reports MSG_TRUNC when b was too small. As net's, it is
// ReadMsgUDPAddrPort with the address converted, so on error too it
// reports an address: the zero one of the socket's family.
func (c *UDPConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	var ap netip.AddrPort
	n, oobn, flags, ap, err = c.ReadMsgUDPAddrPort(b, oob)
	if ap.IsValid() {
		addr = net.UDPAddrFromAddrPort(ap)
	}
	return n, oobn, flags, addr, err
}

// ReadMsgUDPAddrPort is ReadMsgUDP returning a netip.AddrPort. As net's,
// whatever the outcome the address is built from the (possibly empty)
// sockaddr, so an error comes with 0.0.0.0:0 or [::]:0, not the zero
// AddrPort; and a failed recvmsg(2) leaves n at -1.
func (c *UDPConn) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	if !c.ok() {
		return 0, 0, 0, netip.AddrPort{}, syscall.EINVAL
	}
	var sa unix.Sockaddr
	n, oobn, flags, sa, err = c.fd.pfd.ReadMsg(b, oob, 0)
	addr = sockaddrAddrPort(c.fd.family, sa)
	if err != nil {
		err = c.opError("read", c.fd.raddr, wrapSyscallError("recvmsg", err))
	}
	return n, oobn, flags, addr, err
}

// WriteToUDP sends b to addr as one datagram (sendto(2)); on a connected
// socket it fails with net.ErrWriteToConnected, as net's.
func (c *UDPConn) WriteToUDP(b []byte, addr *net.UDPAddr) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	n, err := c.writeTo(b, addr)
	if err != nil {
		return n, c.opError("write", opAddr(addr), err)
	}
	return n, nil
}

func (c *UDPConn) writeTo(b []byte, addr *net.UDPAddr) (int, error) {
	if c.fd.isConnected {
		return 0, net.ErrWriteToConnected
	}
	if addr == nil {
		return 0, errMissingAddress
	}
	sa, err := ipToSockaddr(c.fd.family, addr.IP, addr.Port, addr.Zone)
	if err != nil {
		return 0, err
	}
	n, err := c.fd.pfd.WriteTo(b, sa)
	return n, wrapSyscallError("sendto", err)
}

// WriteTo implements net.PacketConn.
func (c *UDPConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	a, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, c.opError("write", addr, syscall.EINVAL)
	}
	return c.WriteToUDP(b, a)
}

// WriteToUDPAddrPort is WriteToUDP taking a netip.AddrPort. As net's, the
// zero AddrPort is a missing address, an IPv4 socket takes IPv4 and
// IPv4-mapped addresses only, and an error's Addr is the AddrPort itself
// (a net.Addr of network "udp"), not a *net.UDPAddr.
func (c *UDPConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	if !c.ok() {
		return 0, syscall.EINVAL
	}
	n, err := c.writeToAddrPort(b, addr)
	if err != nil {
		return n, c.opError("write", addrPortUDPAddr{addr}, err)
	}
	return n, nil
}

func (c *UDPConn) writeToAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	if c.fd.isConnected {
		return 0, net.ErrWriteToConnected
	}
	if !addr.IsValid() {
		return 0, errMissingAddress
	}
	sa, err := addrPortToSockaddr(c.fd.family, addr)
	if err != nil {
		return 0, err
	}
	n, err := c.fd.pfd.WriteTo(b, sa)
	return n, wrapSyscallError("sendto", err)
}

// addrPortUDPAddr is net's: an AddrPort as the net.Addr of an error.
type addrPortUDPAddr struct {
	netip.AddrPort
}

func (addrPortUDPAddr) Network() string { return "udp" }

// addrPortToSockaddr is net's addrPortToSockaddrInet4/6: an IPv4 socket
// takes an IPv4 or IPv4-mapped address; an IPv6 one takes any (As16 maps
// IPv4 addresses).
func addrPortToSockaddr(family int, ap netip.AddrPort) (unix.Sockaddr, error) {
	a := ap.Addr()
	switch family {
	case unix.AF_INET:
		if !a.Is4() && !a.Is4In6() {
			return nil, &net.AddrError{Err: "non-IPv4 address", Addr: a.String()}
		}
		return &unix.SockaddrInet4{Addr: a.As4(), Port: int(ap.Port())}, nil
	case unix.AF_INET6:
		return &unix.SockaddrInet6{Addr: a.As16(), Port: int(ap.Port()), ZoneId: zoneIndex(a.Zone())}, nil
	}
	return nil, &net.AddrError{Err: "invalid address family", Addr: a.String()}
}

// WriteMsgUDP sends a datagram with ancillary data (sendmsg(2)): to addr
// on an unconnected socket, to the peer (addr nil) on a connected one.
func (c *UDPConn) WriteMsgUDP(b, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if !c.ok() {
		return 0, 0, syscall.EINVAL
	}
	switch {
	case c.fd.isConnected && addr != nil:
		err = net.ErrWriteToConnected
	case !c.fd.isConnected && addr == nil:
		err = errMissingAddress
	default:
		var sa unix.Sockaddr
		if addr != nil {
			sa, err = ipToSockaddr(c.fd.family, addr.IP, addr.Port, addr.Zone)
		}
		if err == nil {
			n, oobn, err = c.fd.pfd.WriteMsg(b, oob, sa)
			err = wrapSyscallError("sendmsg", err)
		}
	}
	if err != nil {
		return n, oobn, c.opError("write", opAddr(addr), err)
	}
	return n, oobn, nil
}

// WriteMsgUDPAddrPort is WriteMsgUDP taking a netip.AddrPort (the zero
// AddrPort meaning none), with net's address rules and error Addr, as
// WriteToUDPAddrPort.
func (c *UDPConn) WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error) {
	if !c.ok() {
		return 0, 0, syscall.EINVAL
	}
	switch {
	case c.fd.isConnected && addr.IsValid():
		err = net.ErrWriteToConnected
	case !c.fd.isConnected && !addr.IsValid():
		err = errMissingAddress
	default:
		var sa unix.Sockaddr
		if addr.IsValid() {
			sa, err = addrPortToSockaddr(c.fd.family, addr)
		}
		if err == nil {
			n, oobn, err = c.fd.pfd.WriteMsg(b, oob, sa)
			err = wrapSyscallError("sendmsg", err)
		}
	}
	if err != nil {
		return n, oobn, c.opError("write", addrPortUDPAddr{addr}, err)
	}
	return n, oobn, nil
}

// ListenPacket announces on the local network address, as
// net.ListenPacket: "udp", "udp4", "udp6" or "unixgram".
func ListenPacket(network, address string) (net.PacketConn, error) {
	var lc ListenConfig
	return lc.ListenPacket(context.Background(), network, address)
}

// ListenPacket is (*net.ListenConfig).ListenPacket. As net's, an empty
// address for a UDP network is the wildcard with port 0; "unix" and
// "unixpacket" give a *UnixConn on a listening socket (net's quirk, the
// counterpart of Listen("unixgram")); a TCP network fails with net's
// "unexpected address type".
func (lc *ListenConfig) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	n, la, err := resolveListenAddr(ctx, network, address)
	if err != nil {
		return nil, err
	}
	var c net.PacketConn
	switch la := la.(type) {
	case *net.UDPAddr:
		c, err = lc.listenUDP(ctx, network, la)
	case *net.UnixAddr:
		var fd *netFD
		fd, err = socket(ctx, network, unix.AF_UNIX, n.sotype, 0, false, la, nil, lc.socketConfig())
		if err == nil {
			c = newUnixConn(fd)
		}
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Addr: la, Err: &net.AddrError{Err: "unexpected address type", Addr: address}}
	}
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: la, Err: err}
	}
	return c, nil
}

func (lc *ListenConfig) listenUDP(ctx context.Context, network string, laddr *net.UDPAddr) (*UDPConn, error) {
	family, ipv6only := favoriteAddrFamily(network, laddr, nil, true)
	fd, err := socket(ctx, network, family, sockDgram, 0, ipv6only, laddr, nil, lc.socketConfig())
	if err != nil {
		return nil, err
	}
	return newUDPConn(fd), nil
}

// ListenUDP is net.ListenUDP.
func ListenUDP(network string, laddr *net.UDPAddr) (*UDPConn, error) {
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Addr: opAddr(laddr), Err: net.UnknownNetworkError(network)}
	}
	if laddr == nil {
		laddr = &net.UDPAddr{}
	}
	var lc ListenConfig
	c, err := lc.listenUDP(context.Background(), network, laddr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: err}
	}
	return c, nil
}

// DialUDP is net.DialUDP: a connected UDP socket.
func DialUDP(network string, laddr, raddr *net.UDPAddr) (*UDPConn, error) {
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Source: opAddr(laddr), Addr: opAddr(raddr), Err: net.UnknownNetworkError(network)}
	}
	if raddr == nil {
		return nil, &net.OpError{Op: "dial", Net: network, Source: opAddr(laddr), Err: errMissingAddress}
	}
	var d Dialer
	c, err := d.dialUDP(context.Background(), network, laddr, raddr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Source: opAddr(laddr), Addr: raddr, Err: err}
	}
	return c, nil
}

func (d *Dialer) dialUDP(ctx context.Context, network string, laddr, raddr *net.UDPAddr) (*UDPConn, error) {
	var la net.Addr
	if laddr != nil {
		la = laddr
	}
	family, ipv6only := favoriteAddrFamily(network, la, raddr, false)
	fd, err := socket(ctx, network, family, sockDgram, 0, ipv6only, la, raddr, d.socketConfig())
	if err != nil {
		return nil, err
	}
	return newUDPConn(fd), nil
}

// ListenUnixgram is net.ListenUnixgram.
func ListenUnixgram(network string, laddr *net.UnixAddr) (*UnixConn, error) {
	if network != "unixgram" {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: opAddr(laddr), Err: net.UnknownNetworkError(network)}
	}
	if laddr == nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: errMissingAddress}
	}
	var lc ListenConfig
	fd, err := socket(context.Background(), network, unix.AF_UNIX, sockDgram, 0, false, laddr, nil, lc.socketConfig())
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: laddr, Err: err}
	}
	return newUnixConn(fd), nil
}
