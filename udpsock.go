//go:build linux

package gatenet

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDPConn is a UDP socket with the method set of *net.UDPConn. A read
// never merges or splits datagrams; a zero-length datagram reads as
// n == 0 with a nil error, as with net.
//
// In a testing/synctest bubble, a UDPConn made there parks its reads
// durably (in fake time) once a send of a socket of the bubble reached
// it, or it sent to or connected to one; until then, and for good once a
// datagram from outside the bubble arrives, it waits as net's does. Its
// writes never park durably.
type UDPConn struct {
	conn
	batch atomic.Pointer[udpBatch] // ReadBatch's and WriteBatch's (udpsock_batch.go)
}

func newUDPConn(fd *netFD) *UDPConn { return &UDPConn{conn: conn{fd}} }

func (c *UDPConn) opError(op string, addr net.Addr, err error) error {
	return &net.OpError{Op: op, Net: c.fd.net, Source: c.fd.localAddr(), Addr: addr, Err: err}
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
	if c.groOn() {
		n, _, _, ap, err := c.readOne(context.Background(), b, nil)
		if err != nil {
			return 0, nil, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
		}
		return n, net.UDPAddrFromAddrPort(ap), nil
	}
	// Raw, not ReadFrom: x/sys's Recvfrom asks an IP socket's protocol
	// (getsockopt) for every datagram before converting the sender
	// (sockname.go).
	var from unix.RawSockaddrAny
	n, err := c.fd.pfd.ReadFromRaw(b, &from)
	if err != nil {
		return n, nil, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
	}
	sa, _ := rawToSockaddr(&from)
	return n, c.udpAddrOf(sa), nil
}

// ReadFrom implements net.PacketConn: ReadFromUDP (recvfrom(2)) with the
// sender as a net.Addr (an untyped nil when there is none), as net's.
func (c *UDPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromUDP(b)
	if addr == nil {
		return n, nil, err
	}
	return n, addr, err
}

// ReadFromUDPAddrPort is ReadFromUDP returning a netip.AddrPort
// (recvfrom(2)), as net's. It converts the sender straight from the
// kernel's raw address on its stack, with no unix.Sockaddr or
// *net.UDPAddr in between, so a read allocates nothing.
func (c *UDPConn) ReadFromUDPAddrPort(b []byte) (int, netip.AddrPort, error) {
	if !c.ok() {
		return 0, netip.AddrPort{}, syscall.EINVAL
	}
	if c.groOn() {
		n, _, _, ap, err := c.readOne(context.Background(), b, nil)
		if err != nil {
			return 0, ap, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
		}
		return n, ap, nil
	}
	var from unix.RawSockaddrAny
	n, err := c.fd.pfd.ReadFromRaw(b, &from)
	if err != nil {
		return n, netip.AddrPort{}, c.opError("read", c.fd.raddr, wrapSyscallError("recvfrom", err))
	}
	return n, rawAddrPort(int(c.fd.family), &from), nil
}

// rawAddrPort converts a sender's raw sockaddr as net's UDP code does:
// the socket family decides, and a missing or foreign address reads as
// that family's zero address.
func rawAddrPort(family int, rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch family {
	case unix.AF_INET:
		var ip [4]byte
		var port uint16
		if rsa.Addr.Family == unix.AF_INET {
			sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
			ip, port = sa.Addr, portFromRaw(&sa.Port)
		}
		return netip.AddrPortFrom(netip.AddrFrom4(ip), port)
	case unix.AF_INET6:
		var ip [16]byte
		var port uint16
		var zone uint32
		if rsa.Addr.Family == unix.AF_INET6 {
			sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
			ip, port, zone = sa.Addr, portFromRaw(&sa.Port), sa.Scope_id
		}
		return netip.AddrPortFrom(netip.AddrFrom16(ip).WithZone(zoneName(zone)), port)
	}
	return netip.AddrPort{}
}

// portFromRaw reads a sockaddr's port, stored in network byte order.
func portFromRaw(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}

func portToRaw(p *uint16, port uint16) {
	b := (*[2]byte)(unsafe.Pointer(p))
	b[0], b[1] = byte(port>>8), byte(port)
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

// ReadMsgUDPAddrPort is ReadMsgUDP returning a netip.AddrPort (recvmsg(2)).
// As net's,
// whatever the outcome the address is built from the (possibly empty)
// sockaddr, so an error comes with 0.0.0.0:0 or [::]:0, not the zero
// AddrPort; and a failed recvmsg(2) leaves n at -1.
func (c *UDPConn) ReadMsgUDPAddrPort(b, oob []byte) (n, oobn, flags int, addr netip.AddrPort, err error) {
	if !c.ok() {
		return 0, 0, 0, netip.AddrPort{}, syscall.EINVAL
	}
	if c.groOn() {
		n, oobn, flags, addr, err = c.readOne(context.Background(), b, oob)
		if err != nil {
			// As net's: -1 once recvmsg(2) was made (readOne's -1 after a
			// wait), 0 when the call failed before it (closed, deadline).
			if _, errno := err.(unix.Errno); errno {
				n = -1
			}
			addr = rawAddrPort(int(c.fd.family), &unix.RawSockaddrAny{})
			err = c.opError("read", c.fd.raddr, wrapSyscallError("recvmsg", err))
		}
		return n, oobn, flags, addr, err
	}
	var from unix.RawSockaddrAny
	n, oobn, flags, err = c.fd.pfd.ReadMsgRaw(b, oob, 0, &from)
	addr = rawAddrPort(int(c.fd.family), &from)
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
	ap, err := ipToAddrPort(int(c.fd.family), addr.IP, 0, addr.Zone)
	if err != nil {
		return 0, err
	}
	if addr.Port < 0 || addr.Port > 0xFFFF {
		// As the unix.Sockaddr conversion inside sendto reports it.
		return 0, wrapSyscallError("sendto", unix.EINVAL)
	}
	return c.fd.sendTo(b, netip.AddrPortFrom(ap.Addr(), uint16(addr.Port)))
}

// ipToAddrPort is ipToSockaddr yielding a netip.AddrPort (familyIP's
// rules).
func ipToAddrPort(family int, ip net.IP, port uint16, zone string) (netip.AddrPort, error) {
	fip, err := familyIP(family, ip)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if family == unix.AF_INET {
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(fip)), port), nil
	}
	return netip.AddrPortFrom(netip.AddrFrom16([16]byte(fip)).WithZone(zone), port), nil
}

// WriteTo implements net.PacketConn: WriteToUDP (sendto(2)) for a
// *net.UDPAddr, EINVAL in a *net.OpError for any other address, as net's.
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

// WriteToUDPAddrPort is WriteToUDP taking a netip.AddrPort (sendto(2),
// with the sockaddr built on the stack: no allocation). As net's, the
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
	return c.fd.sendTo(b, addr)
}

// sendTo sends b to ap as one datagram: sendto(2) with the sockaddr built
// on the stack, so that a send allocates nothing; in a synctest bubble
// it wakes the bubble's readers of ap once the datagram is sent.
func (fd *netFD) sendTo(b []byte, ap netip.AddrPort) (int, error) {
	var sa rawInetSockaddr
	if err := addrPortToRaw(int(fd.family), ap, &sa); err != nil {
		return 0, err
	}
	var to []*netFD
	if fd.bubbleDgram {
		to = fd.bubbleSending(rawDatagramKey(&sa))
	}
	n, err := fd.pfd.WriteToRaw(b, unsafe.Pointer(&sa.raw), sa.len)
	fd.bubbleSent(to, err)
	return n, wrapSyscallError("sendto", err)
}

// rawInetSockaddr is an IPv4 or IPv6 sockaddr built in place (an IPv4
// one laid over the start of raw), so a send needs no heap sockaddr.
type rawInetSockaddr struct {
	raw unix.RawSockaddrInet6
	len uint32
}

// addrPortToRaw is net's addrPortToSockaddrInet4/6 into a
// rawInetSockaddr: an IPv4 socket takes an IPv4 or IPv4-mapped address;
// an IPv6 one takes any (As16 maps IPv4 addresses).
func addrPortToRaw(family int, ap netip.AddrPort, sa *rawInetSockaddr) error {
	a := ap.Addr()
	switch family {
	case unix.AF_INET:
		if !a.Is4() && !a.Is4In6() {
			return &net.AddrError{Err: "non-IPv4 address", Addr: a.String()}
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa.raw))
		sa4.Family = unix.AF_INET
		portToRaw(&sa4.Port, ap.Port())
		sa4.Addr = a.As4()
		sa.len = unix.SizeofSockaddrInet4
		return nil
	case unix.AF_INET6:
		sa.raw.Family = unix.AF_INET6
		portToRaw(&sa.raw.Port, ap.Port())
		sa.raw.Addr = a.As16()
		sa.raw.Scope_id = zoneIndex(a.Zone())
		sa.len = unix.SizeofSockaddrInet6
		return nil
	}
	return &net.AddrError{Err: "invalid address family", Addr: a.String()}
}

// addrPortUDPAddr is net's: an AddrPort as the net.Addr of an error.
type addrPortUDPAddr struct {
	netip.AddrPort
}

func (addrPortUDPAddr) Network() string { return "udp" }

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
		var sa rawInetSockaddr
		var ap netip.AddrPort
		if addr != nil {
			ap, err = ipToAddrPort(int(c.fd.family), addr.IP, 0, addr.Zone)
			if err == nil && (addr.Port < 0 || addr.Port > 0xFFFF) {
				// As the unix.Sockaddr conversion inside sendmsg reports it.
				err = wrapSyscallError("sendmsg", unix.EINVAL)
			}
			if err == nil {
				err = addrPortToRaw(int(c.fd.family), netip.AddrPortFrom(ap.Addr(), uint16(addr.Port)), &sa)
			}
		}
		if err == nil {
			n, oobn, err = c.writeMsgRaw(b, oob, &sa)
		}
	}
	if err != nil {
		return n, oobn, c.opError("write", opAddr(addr), err)
	}
	return n, oobn, nil
}

// WriteMsgUDPAddrPort is WriteMsgUDP (sendmsg(2)) taking a netip.AddrPort (the zero
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
		var sa rawInetSockaddr
		if addr.IsValid() {
			err = addrPortToRaw(int(c.fd.family), addr, &sa)
		}
		if err == nil {
			n, oobn, err = c.writeMsgRaw(b, oob, &sa)
		}
	}
	if err != nil {
		return n, oobn, c.opError("write", addrPortUDPAddr{addr}, err)
	}
	return n, oobn, nil
}

// writeMsgRaw sends with sendmsg(2) to sa, or to the connected peer when
// sa is empty (len 0).
func (c *UDPConn) writeMsgRaw(b, oob []byte, sa *rawInetSockaddr) (int, int, error) {
	var p unsafe.Pointer
	if sa.len > 0 {
		p = unsafe.Pointer(&sa.raw)
	}
	var to []*netFD
	if c.fd.bubbleDgram {
		to = c.fd.bubbleSending(rawDatagramKey(sa)) // "" when sa is empty: the connected peer
	}
	n, oobn, err := c.fd.pfd.WriteMsgRaw(b, oob, p, sa.len)
	c.fd.bubbleSent(to, err)
	return n, oobn, wrapSyscallError("sendmsg", err)
}

// ListenPacket announces on the local network address (socket(2),
// bind(2)), as net.ListenPacket: "udp", "udp4", "udp6", "unixgram", or raw
// IP with a protocol ("ip4:icmp", "ip6:58"; CAP_NET_RAW needed).
func ListenPacket(network, address string) (net.PacketConn, error) {
	var lc ListenConfig
	return lc.ListenPacket(context.Background(), network, address)
}

// ListenPacket is (*net.ListenConfig).ListenPacket (socket(2), bind(2)).
// As net's, an empty
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
	case *net.IPAddr:
		c, err = lc.listenIP(ctx, network, la)
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

// ListenUDP is net.ListenUDP: a UDP socket bound to laddr (socket(2),
// bind(2)).
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

// DialUDP is net.DialUDP: a connected UDP socket (socket(2), connect(2)).
func DialUDP(network string, laddr, raddr *net.UDPAddr) (*UDPConn, error) {
	var d Dialer
	return dialTyped(context.Background(), network, isUDPNetwork(network), laddr, raddr, d.dialUDP)
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

// ListenUnixgram is net.ListenUnixgram: a Unix datagram socket bound to
// laddr (socket(2), bind(2)).
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
