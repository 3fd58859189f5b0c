//go:build linux

package gatenet

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Address resolution, as net's resolveAddrList: parse the network, split
// host and port, look the port and the host up (through the resolver the
// caller names, or net.DefaultResolver), and keep the addresses the
// network allows.

// sockNetwork is a parsed network name.
type sockNetwork struct {
	name   string // as the caller wrote it
	afnet  string // "tcp", "tcp4", "udp6", "unix", "ip4", …
	sotype int
	proto  int // the IP protocol of a raw network ("ip4:icmp": 1)
}

// parseNetwork accepts the networks gatenet serves, as net's parseNetwork
// does for a dial or listen: a raw IP network needs its protocol, by
// number or by name ("ip4:1", "ip6:ipv6-icmp").
func parseNetwork(network string) (sockNetwork, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
		return sockNetwork{network, network, sockStream, 0}, nil
	case "udp", "udp4", "udp6":
		return sockNetwork{network, network, sockDgram, 0}, nil
	case "unix":
		return sockNetwork{network, network, sockStream, 0}, nil
	case "unixgram":
		return sockNetwork{network, network, sockDgram, 0}, nil
	case "unixpacket":
		return sockNetwork{network, network, sockSeqpacket, 0}, nil
	}
	afnet, protostr, ok := network, "", false
	if i := strings.LastIndexByte(network, ':'); i >= 0 {
		afnet, protostr, ok = network[:i], network[i+1:], true
	}
	switch afnet {
	case "ip", "ip4", "ip6":
		if !ok {
			break // a raw network without its protocol
		}
		proto, n, isNum := dtoi(protostr)
		if !isNum || n != len(protostr) {
			var err error
			if proto, err = lookupProtocol(protostr); err != nil {
				return sockNetwork{}, err
			}
		}
		return sockNetwork{network, afnet, unix.SOCK_RAW, proto}, nil
	}
	return sockNetwork{}, net.UnknownNetworkError(network)
}

// dtoi is net's: the decimal number s starts with, up to 0xFFFFFF, and how
// many bytes it took.
func dtoi(s string) (n int, i int, ok bool) {
	const big = 0xFFFFFF
	for i = 0; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
		if n >= big {
			return big, i, false
		}
	}
	if i == 0 {
		return 0, 0, false
	}
	return n, i, true
}

// protocols are the IP protocol names net knows without /etc/protocols;
// readProtocols adds that file's, as net's lookupProtocol does.
var (
	protocols = map[string]int{
		"icmp":      1,
		"igmp":      2,
		"tcp":       6,
		"udp":       17,
		"ipv6-icmp": 58,
	}
	readProtocolsOnce sync.Once
)

// readProtocols loads /etc/protocols ("tcp 6 TCP # comment": a name, its
// number, aliases) into protocols, names already there winning.
func readProtocols() {
	data, err := os.ReadFile("/etc/protocols")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		proto, _, ok := dtoi(f[1])
		if !ok {
			continue
		}
		for _, name := range append([]string{f[0]}, f[2:]...) {
			if _, ok := protocols[name]; !ok {
				protocols[name] = proto
			}
		}
	}
}

// lookupProtocol is net's: the protocol's number by its name, lowercased
// (ASCII) and at most maxProtoLength bytes long.
func lookupProtocol(name string) (int, error) {
	const maxProtoLength = len("RSVP-E2E-IGNORE") + 10
	readProtocolsOnce.Do(readProtocols)
	lower := []byte(name[:min(len(name), maxProtoLength)])
	for i, c := range lower {
		if 'A' <= c && c <= 'Z' {
			lower[i] = c + ('a' - 'A')
		}
	}
	proto, found := protocols[string(lower)]
	if !found || len(lower) != len(name) {
		return 0, &net.AddrError{Err: "unknown IP protocol specified", Addr: name}
	}
	return proto, nil
}

func (n sockNetwork) isUnix() bool { return strings.HasPrefix(n.afnet, "unix") }

// addrList is a list of resolved addresses, all of one kind.
type addrList []net.Addr

// first returns the first address that satisfies strategy, or the first.
func (l addrList) first(strategy func(net.Addr) bool) net.Addr {
	for _, a := range l {
		if strategy(a) {
			return a
		}
	}
	return l[0]
}

// partition splits the list at the first address whose family differs
// from the first one's, as happy eyeballs wants (primaries, fallbacks).
func (l addrList) partition(strategy func(net.Addr) bool) (primaries, fallbacks addrList) {
	var primaryLabel bool
	for i, a := range l {
		label := strategy(a)
		if i == 0 || label == primaryLabel {
			primaryLabel = label
			primaries = append(primaries, a)
		} else {
			fallbacks = append(fallbacks, a)
		}
	}
	return
}

func isIPv4(a net.Addr) bool {
	ip, _ := ipOf(a)
	return ip.To4() != nil
}

// resolveAddrList resolves address for op ("listen" or "dial") on network.
// A dial's hint (the Dialer's LocalAddr) must be of the same network, and
// keeps only the addresses of its family, as net's resolveAddrList.
func resolveAddrList(ctx context.Context, r *net.Resolver, op string, n sockNetwork, address string, hint net.Addr) (addrList, error) {
	if op == "dial" && address == "" {
		return nil, errMissingAddress
	}
	if n.isUnix() {
		a, err := net.ResolveUnixAddr(n.afnet, address)
		if err != nil {
			return nil, err
		}
		if op == "dial" && hint != nil && a.Network() != hint.Network() {
			return nil, &net.AddrError{Err: "mismatched local address type", Addr: hint.String()}
		}
		return addrList{a}, nil
	}
	addrs, err := resolveInternetAddrList(ctx, r, n, address)
	if err != nil || op != "dial" || hint == nil {
		return addrs, err
	}
	hip, _ := ipOf(hint)
	wildcard := isWildcard(hip)
	var filtered addrList
	for _, a := range addrs {
		if a.Network() != hint.Network() {
			return nil, &net.AddrError{Err: "mismatched local address type", Addr: hint.String()}
		}
		ip, _ := ipOf(a)
		if !wildcard && !isWildcard(ip) && !matchAddrFamily(ip, hip) {
			continue
		}
		filtered = append(filtered, a)
	}
	if len(filtered) == 0 {
		return nil, &net.AddrError{Err: "no suitable address found", Addr: hint.String()}
	}
	return filtered, nil
}

// matchAddrFamily is net's IP.matchAddrFamily: both IPv4 or both IPv6.
func matchAddrFamily(ip, x net.IP) bool {
	return ip.To4() != nil && x.To4() != nil || ip.To16() != nil && ip.To4() == nil && x.To16() != nil && x.To4() == nil
}

// resolveInternetAddrList is net's internetAddrList for TCP, UDP and raw IP.
func resolveInternetAddrList(ctx context.Context, r *net.Resolver, n sockNetwork, address string) (addrList, error) {
	if r == nil {
		r = net.DefaultResolver
	}
	// An empty address is the wildcard, port 0, as net's internetAddrList
	// has it (it never reaches a dial: resolveAddrList refuses it there).
	var host string
	var port int
	if n.sotype == unix.SOCK_RAW {
		host = address // a raw network's address has no port
	} else if address != "" {
		var portStr string
		var err error
		if host, portStr, err = net.SplitHostPort(address); err != nil {
			return nil, err
		}
		if port, err = r.LookupPort(ctx, n.afnet, portStr); err != nil {
			return nil, err
		}
	}
	mk := func(ip net.IP, zone string) net.Addr {
		switch n.sotype {
		case sockDgram:
			return &net.UDPAddr{IP: ip, Port: port, Zone: zone}
		case unix.SOCK_RAW:
			return &net.IPAddr{IP: ip, Zone: zone}
		}
		return &net.TCPAddr{IP: ip, Port: port, Zone: zone}
	}
	if host == "" {
		return addrList{mk(nil, "")}, nil
	}
	var ips []net.IPAddr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []net.IPAddr{{IP: net.IP(ip.AsSlice()).To16(), Zone: ip.Zone()}}
	} else if ips, err = lookupFamily(ctx, r, n.afnet, host); err != nil {
		return nil, err
	}
	// go.dev/issue/18806, as net: a host that can bind "::" but not
	// connect to it falls back to 0.0.0.0.
	if len(ips) == 1 && ips[0].IP.Equal(net.IPv6unspecified) {
		ips = append(ips, net.IPAddr{IP: net.IPv4zero})
	}
	var list addrList
	for _, ip := range ips {
		switch n.afnet[len(n.afnet)-1] {
		case '4':
			if ip.IP.To4() == nil {
				continue
			}
		case '6':
			if len(ip.IP) != net.IPv6len || ip.IP.To4() != nil {
				continue
			}
		}
		list = append(list, mk(ip.IP, ip.Zone))
	}
	if len(list) == 0 {
		return nil, &net.AddrError{Err: "no suitable address found", Addr: host}
	}
	return list, nil
}

// lookupFamily looks host up as net's internetAddrList does: a network
// that names a family ("tcp4", "udp6", "ip4") asks for that family's
// addresses only, so a dial never waits on the other's query.
func lookupFamily(ctx context.Context, r *net.Resolver, afnet, host string) ([]net.IPAddr, error) {
	var family string
	switch afnet[len(afnet)-1] {
	case '4':
		family = "ip4"
	case '6':
		family = "ip6"
	default:
		return r.LookupIPAddr(ctx, host)
	}
	addrs, err := r.LookupNetIP(ctx, family, host)
	if err != nil {
		return nil, err
	}
	ips := make([]net.IPAddr, len(addrs))
	for i, a := range addrs {
		ips[i] = net.IPAddr{IP: net.IP(a.AsSlice()), Zone: a.Zone()}
	}
	return ips, nil
}
