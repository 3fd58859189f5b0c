//go:build linux

package gatenet

import (
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// Conversions between net's address types and the kernel's, as net's
// ipsock_posix.go and unixsock_posix.go do them.

// sockaddrToAddr turns a kernel address into the net.Addr of the socket's
// type: *net.TCPAddr, *net.UDPAddr, *net.IPAddr (SOCK_RAW) or
// *net.UnixAddr. It returns nil for nil.
func sockaddrToAddr(sotype int, network string, sa unix.Sockaddr) net.Addr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		// Four bytes, as net's sockaddrToTCP: a 16-byte form would
		// make AddrPort() report "[::ffff:127.0.0.1]:port".
		ip := net.IP(append([]byte(nil), sa.Addr[:]...))
		switch sotype {
		case unix.SOCK_DGRAM:
			return &net.UDPAddr{IP: ip, Port: sa.Port}
		case unix.SOCK_RAW:
			return &net.IPAddr{IP: ip}
		}
		return &net.TCPAddr{IP: ip, Port: sa.Port}
	case *unix.SockaddrInet6:
		ip := net.IP(append([]byte(nil), sa.Addr[:]...))
		zone := zoneName(sa.ZoneId)
		switch sotype {
		case unix.SOCK_DGRAM:
			return &net.UDPAddr{IP: ip, Port: sa.Port, Zone: zone}
		case unix.SOCK_RAW:
			return &net.IPAddr{IP: ip, Zone: zone}
		}
		return &net.TCPAddr{IP: ip, Port: sa.Port, Zone: zone}
	case *unix.SockaddrUnix:
		// x/sys/unix already spells abstract names "@name", and an
		// unnamed socket "@", as syscall does.
		return &net.UnixAddr{Name: sa.Name, Net: network}
	}
	return nil
}

func zoneName(id uint32) string {
	if id == 0 {
		return ""
	}
	if ifi, err := net.InterfaceByIndex(int(id)); err == nil {
		return ifi.Name
	}
	return strconv.Itoa(int(id))
}

func zoneIndex(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	// As net's zoneCache.index: the decimal prefix (net's dtoi), capped
	// at 0xFFFFFF; no digits is 0.
	n := 0
	for i := 0; i < len(zone) && '0' <= zone[i] && zone[i] <= '9'; i++ {
		n = n*10 + int(zone[i]-'0')
		if n >= 0xFFFFFF {
			return 0xFFFFFF
		}
	}
	return uint32(n)
}

// familyIP applies the address rules of a socket of family to ip, as net
// does: a nil IP is the family's wildcard, an IPv4 socket takes IPv4 and
// IPv4-mapped addresses, an IPv6 one any address (an unspecified IPv4
// address becomes "::"). It returns the 4- or 16-byte form.
func familyIP(family int, ip net.IP) (net.IP, error) {
	switch family {
	case unix.AF_INET:
		if len(ip) == 0 {
			ip = net.IPv4zero
		}
		if ip4 := ip.To4(); ip4 != nil {
			return ip4, nil
		}
		return nil, &net.AddrError{Err: "non-IPv4 address", Addr: ip.String()}
	case unix.AF_INET6:
		if len(ip) == 0 || ip.Equal(net.IPv4zero) {
			ip = net.IPv6zero
		}
		if ip6 := ip.To16(); ip6 != nil {
			return ip6, nil
		}
		return nil, &net.AddrError{Err: "non-IPv6 address", Addr: ip.String()}
	}
	return nil, &net.AddrError{Err: "invalid address family", Addr: ip.String()}
}

// ipToSockaddr builds the kernel address for ip:port in family (familyIP's
// rules).
func ipToSockaddr(family int, ip net.IP, port int, zone string) (unix.Sockaddr, error) {
	fip, err := familyIP(family, ip)
	if err != nil {
		return nil, err
	}
	if family == unix.AF_INET {
		return &unix.SockaddrInet4{Port: port, Addr: [4]byte(fip)}, nil
	}
	return &unix.SockaddrInet6{Port: port, ZoneId: zoneIndex(zone), Addr: [16]byte(fip)}, nil
}

// addrToSockaddr converts a net.Addr for a socket of family.
func addrToSockaddr(family int, a net.Addr) (unix.Sockaddr, error) {
	switch a := a.(type) {
	case *net.TCPAddr:
		return ipToSockaddr(family, a.IP, a.Port, a.Zone)
	case *net.UDPAddr:
		return ipToSockaddr(family, a.IP, a.Port, a.Zone)
	case *net.IPAddr:
		return ipToSockaddr(family, a.IP, 0, a.Zone)
	case *net.UnixAddr:
		if a.Name == "" {
			return nil, nil // unnamed: let the kernel choose (autobind)
		}
		name := a.Name
		if name[0] == '@' {
			name = "\x00" + name[1:]
		}
		return &unix.SockaddrUnix{Name: name}, nil
	}
	return nil, &net.AddrError{Err: "unexpected address type", Addr: a.String()}
}

// ipFamily reports an IP address's family as net's TCPAddr.family does:
// AF_INET for IPv4 (and IPv4-mapped) addresses and for any of at most 4
// bytes (nil, the wildcard, included; a malformed one then fails as a
// non-IPv4 address), AF_INET6 otherwise.
func ipFamily(ip net.IP) int {
	if len(ip) <= net.IPv4len || ip.To4() != nil {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

func isWildcard(ip net.IP) bool { return ip == nil || ip.IsUnspecified() }

func ipOf(a net.Addr) (net.IP, bool) {
	switch a := a.(type) {
	case *net.TCPAddr:
		if a == nil {
			return nil, false
		}
		return a.IP, true
	case *net.UDPAddr:
		if a == nil {
			return nil, false
		}
		return a.IP, true
	case *net.IPAddr:
		if a == nil {
			return nil, false
		}
		return a.IP, true
	}
	return nil, false
}

// favoriteAddrFamily is net's choice of socket family: a network ending in
// 4 or 6 decides; a wildcard listener is dual-stack IPv6 (V6ONLY off) when
// the kernel supports IPv4-mapped addresses; otherwise IPv4 if both ends
// are IPv4.
func favoriteAddrFamily(network string, laddr, raddr net.Addr, listen bool) (family int, ipv6only bool) {
	switch network[len(network)-1] {
	case '4':
		return unix.AF_INET, false
	case '6':
		return unix.AF_INET6, true
	}
	lip, lok := ipOf(laddr)
	rip, rok := ipOf(raddr)
	if listen && (!lok || isWildcard(lip)) {
		if supportsIPv4map() || !supportsIPv4() {
			return unix.AF_INET6, false
		}
		if !lok {
			return unix.AF_INET, false
		}
		return ipFamily(lip), false
	}
	if (!lok || ipFamily(lip) == unix.AF_INET) && (!rok || ipFamily(rip) == unix.AF_INET) {
		return unix.AF_INET, false
	}
	return unix.AF_INET6, false
}
