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
func (c *UDPConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	n, addr, err := c.ReadFromUDP(b)
	if addr == nil {
		return n, netip.AddrPort{}, err
	}
	return n, addr.AddrPort(), err
}

// ReadMsgUDP reads a datagram with its ancillary data (recvmsg(2));
// flags reports MSG_TRUNC when b was too small.
func (c *UDPConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	if !c.ok() {
		return 0, 0, 0, nil, syscall.EINVAL
	}
	var sa unix.Sockaddr
	n, oobn, flags, sa, err = c.fd.pfd.ReadMsg(b, oob, 0)
	if err != nil {
		return n, oobn, flags, nil, c.opError("read", c.fd.raddr, wrapSyscallError("recvmsg", err))
	}
	return n, oobn, flags, c.udpAddrOf(sa), nil
}

// ReadMsgUDPAddrPort is ReadMsgUDP returning a netip.AddrPort.
func (c *UDPConn) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	var a *net.UDPAddr
	n, oobn, flags, a, err = c.ReadMsgUDP(b, oob)
	if a != nil {
		addr = a.AddrPort()
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

// WriteToUDPAddrPort is WriteToUDP taking a netip.AddrPort.
func (c *UDPConn) WriteToUDPAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	return c.WriteToUDP(b, net.UDPAddrFromAddrPort(addr))
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
// AddrPort meaning none).
func (c *UDPConn) WriteMsgUDPAddrPort(b, oob []byte, addr netip.AddrPort) (n, oobn int, err error) {
	var a *net.UDPAddr
	if addr.IsValid() {
		a = net.UDPAddrFromAddrPort(addr)
	}
	return c.WriteMsgUDP(b, oob, a)
}

// ListenPacket announces on the local network address, as
// net.ListenPacket: "udp", "udp4", "udp6" or "unixgram".
func ListenPacket(network, address string) (net.PacketConn, error) {
	var lc ListenConfig
	return lc.ListenPacket(context.Background(), network, address)
}

// ListenPacket is (*net.ListenConfig).ListenPacket.
func (lc *ListenConfig) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	n, err := parseNetwork(network)
	if err == nil && n.sotype != sockDgram {
		err = net.UnknownNetworkError(network)
	}
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	addrs, err := resolveAddrList(ctx, nil, "listen", n, address, nil)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	la := addrs.first(isIPv4)
	var c net.PacketConn
	switch la := la.(type) {
	case *net.UDPAddr:
		c, err = lc.listenUDP(ctx, network, la)
	case *net.UnixAddr:
		var fd *netFD
		fd, err = socket(ctx, network, unix.AF_UNIX, sockDgram, 0, false, la, nil, lc.socketConfig())
		if err == nil {
			c = newUnixConn(fd)
		}
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
