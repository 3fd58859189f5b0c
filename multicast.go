//go:build linux

package gatenet

import (
	"context"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// ListenMulticastUDP listens for datagrams to the group address gaddr on
// the interface ifi (nil: the system's choice), as net.ListenMulticastUDP:
// the socket is bound to the wildcard address on gaddr's port with
// SO_REUSEADDR, joins the group (IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP) and,
// as net's, turns off the loopback of its own multicast sends.
func ListenMulticastUDP(network string, ifi *net.Interface, gaddr *net.UDPAddr) (*UDPConn, error) {
	switch network {
	case "udp", "udp4", "udp6":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Addr: opAddr(gaddr), Err: net.UnknownNetworkError(network)}
	}
	if gaddr == nil || gaddr.IP == nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: opAddr(gaddr), Err: errMissingAddress}
	}
	var lc ListenConfig
	c, err := lc.listenUDP(context.Background(), network, gaddr)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: gaddr, Err: err}
	}
	if err := c.fd.joinGroup(ifi, gaddr.IP); err != nil {
		c.Close()
		return nil, &net.OpError{Op: "listen", Net: network, Addr: gaddr, Err: err}
	}
	return c, nil
}

// joinGroup sets the multicast interface, turns multicast loopback off and
// joins group, as net's listenIPv4MulticastUDP / listenIPv6MulticastUDP.
func (fd *netFD) joinGroup(ifi *net.Interface, group net.IP) error {
	if err := fd.pfd.Incref(); err != nil {
		return err
	}
	defer fd.pfd.Decref()
	s := fd.pfd.Sysfd
	if ip4 := group.To4(); ip4 != nil { // by the group's family, not the socket's, as net
		// The interface by index (ip_mreqn), as net's on Linux: it need
		// have no IPv4 address, and one it shares with another cannot
		// pick the wrong one.
		mreq := &unix.IPMreqn{Multiaddr: [4]byte(ip4)}
		if ifi != nil {
			mreq.Ifindex = int32(ifi.Index)
			if err := unix.SetsockoptIPMreqn(s, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: mreq.Ifindex}); err != nil {
				return os.NewSyscallError("setsockopt", err)
			}
		}
		if err := unix.SetsockoptByte(s, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 0); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
		return os.NewSyscallError("setsockopt", unix.SetsockoptIPMreqn(s, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq))
	}
	mreq := &unix.IPv6Mreq{Multiaddr: [16]byte(group.To16())}
	if ifi != nil {
		mreq.Interface = uint32(ifi.Index)
		if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifi.Index); err != nil {
			return os.NewSyscallError("setsockopt", err)
		}
	}
	if err := unix.SetsockoptInt(s, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_LOOP, 0); err != nil {
		return os.NewSyscallError("setsockopt", err)
	}
	return os.NewSyscallError("setsockopt", unix.SetsockoptIPv6Mreq(s, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, mreq))
}
