//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Fuzzing address parsing and sockaddr conversion for every network:
//
//   - FuzzResolveAddr feeds a network and an address through gatenet's
//     resolution (what Listen, ListenPacket and Dial do first) and compares
//     it with net's (net.ResolveTCPAddr, ResolveUDPAddr, ResolveIPAddr,
//     ResolveUnixAddr;
//     net.Listen, ListenPacket and Dial when resolution fails, which then
//     never reach a socket), then round-trips every resolved address
//     Addr → sockaddr → Addr → sockaddr.
//   - FuzzSockaddr starts from a kernel address (IPv4, IPv6 with a zone,
//     Unix path, abstract or unnamed) and checks sockaddr → Addr → sockaddr
//     is the identity, and that the Addr's String parses back (net's
//     parser) to the same sockaddr.
//
// No name is ever looked up on the network: gatenet resolves through a
// resolver whose DNS dial fails, and net is only asked about empty or
// literal hosts. Nothing is bound or connected.

// noDNS is a resolver that cannot reach a name server.
var noDNS = &net.Resolver{
	PreferGo: true,
	Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("fuzz: no DNS")
	},
}

var fuzzNetworks = []string{"tcp", "tcp4", "tcp6", "udp", "udp4", "udp6", "unix", "unixgram", "unixpacket",
	"ip4:icmp", "ip6:ipv6-icmp", "ip:253"}

// isRawNetwork reports whether network is a raw IP one ("ip", "ip4:1"),
// whose address is a host without a port.
func isRawNetwork(network string) bool {
	return strings.HasPrefix(network, "ip")
}

// literalOnly reports whether net resolves address on network without a
// host lookup: it fails to split, or its host is empty or an IP literal.
func literalOnly(network, address string) bool {
	host, _, err := net.SplitHostPort(address)
	if isRawNetwork(network) {
		host, err = address, nil
	}
	if err != nil || host == "" {
		return true
	}
	_, err = netip.ParseAddr(host)
	return err == nil
}

func netResolve(network, address string) (net.Addr, error) {
	switch {
	case strings.HasPrefix(network, "tcp"):
		return net.ResolveTCPAddr(network, address)
	case strings.HasPrefix(network, "udp"):
		return net.ResolveUDPAddr(network, address)
	case strings.HasPrefix(network, "ip"):
		return net.ResolveIPAddr(network, address)
	}
	return net.ResolveUnixAddr(network, address)
}

// kernelForm is a sockaddr as the kernel reads it: x/sys/unix encodes a
// Unix name starting with '@' or NUL as the same abstract address.
func kernelForm(sa unix.Sockaddr) unix.Sockaddr {
	if u, ok := sa.(*unix.SockaddrUnix); ok && len(u.Name) > 0 && u.Name[0] == 0 {
		return &unix.SockaddrUnix{Name: "@" + u.Name[1:]}
	}
	return sa
}

func familyOf(network string, a net.Addr, listen bool) int {
	if strings.HasPrefix(network, "unix") {
		return unix.AF_UNIX
	}
	if listen {
		f, _ := gatenet.FavoriteAddrFamily(network, a, nil, true)
		return f
	}
	f, _ := gatenet.FavoriteAddrFamily(network, nil, a, false)
	return f
}

// roundTrip converts a to a sockaddr of family, back to an Addr and to a
// sockaddr again; the two sockaddrs must be the same address.
func roundTrip(t *testing.T, sotype int, network string, family int, a net.Addr) {
	sa, err := gatenet.AddrToSockaddr(family, a)
	if err != nil {
		// Only an address of the other family is refused (net refuses it
		// the same way).
		var ae *net.AddrError
		require.ErrorAs(t, err, &ae, "%s %v in family %d", network, a, family)
		return
	}
	if sa == nil { // an unnamed Unix address: the kernel autobinds
		require.Equal(t, "", a.(*net.UnixAddr).Name)
		return
	}
	back := gatenet.SockaddrToAddr(sotype, network, sa)
	require.NotNil(t, back, "%s %v → %#v → nil", network, a, sa)
	require.Equal(t, a.Network(), back.Network(), "%s %v", network, a)
	sa2, err := gatenet.AddrToSockaddr(family, back)
	require.NoError(t, err, "%s %v → %#v → %v", network, a, sa, back)
	require.Equal(t, kernelForm(sa), kernelForm(sa2), "%s %v → %v", network, a, back)
	switch a := a.(type) {
	case *net.TCPAddr:
		require.Equal(t, a.Port, back.(*net.TCPAddr).Port)
		sameIP(t, a.IP, back.(*net.TCPAddr).IP)
	case *net.UDPAddr:
		require.Equal(t, a.Port, back.(*net.UDPAddr).Port)
		sameIP(t, a.IP, back.(*net.UDPAddr).IP)
	}
}

// sameIP: the address survived, except that a wildcard may change family
// (0.0.0.0 in an AF_INET6 socket is "::", as net does it).
func sameIP(t *testing.T, ip, back net.IP) {
	switch {
	case ip == nil || ip.IsUnspecified():
		require.True(t, back.IsUnspecified(), "%v → %v", ip, back)
	default:
		require.True(t, ip.Equal(back), "%v → %v", ip, back)
	}
}

func FuzzResolveAddr(f *testing.F) {
	testutil.CheckLeaks(f)
	// The network is one of gatenet's by index (n < 200), or any string.
	index := func(network string) uint8 {
		for i, n := range fuzzNetworks {
			if n == network {
				return uint8(i)
			}
		}
		return 255
	}
	for _, seed := range []struct{ network, address string }{
		{"tcp", "127.0.0.1:80"},
		{"tcp4", "[::1]:80"},
		{"tcp6", "[fe80::1%lo]:8080"},
		{"udp", ":0"},
		{"udp6", "[::ffff:10.0.0.1]:53"},
		{"tcp", "[::]:http"},
		{"tcp", "localhost:99999"},
		{"unix", "/tmp/x.sock"},
		{"unixgram", "@abstract"},
		{"unixpacket", ""},
		{"ip4:icmp", "127.0.0.1"},
		{"tcp", "1.2.3.4"},
	} {
		f.Add(index(seed.network), seed.network, seed.address)
	}
	f.Fuzz(func(t *testing.T, n uint8, network, address string) {
		if n < 200 {
			network = fuzzNetworks[int(n)%len(fuzzNetworks)]
		}
		ctx := context.Background()
		list, sotype, err := gatenet.ResolveAddrList(ctx, noDNS, "listen", network, address)
		_, _, derr := gatenet.ResolveAddrList(ctx, noDNS, "dial", network, address)
		known := false
		for _, n := range fuzzNetworks {
			known = known || n == network
		}
		if !known {
			// Any other network: refused, or a raw IP one, as net has
			// them; Listen (which opens no socket for either: net's serves
			// TCP and Unix only) must fail in the same words.
			if err == nil {
				require.True(t, isRawNetwork(network), "%q resolved", network)
			}
			if !literalOnly(network, address) {
				return // net would look the host up
			}
			_, g := gatenet.Listen(network, address)
			_, n := net.Listen(network, address)
			require.Error(t, g)
			require.Error(t, n)
			require.Equal(t, n.Error(), g.Error(), "listen %q %q", network, address)
			return
		}
		if (err == nil) != (derr == nil) {
			// Only a dial refuses the empty address.
			require.Equal(t, "", address, "listen: %v; dial: %v", err, derr)
		}
		if err == nil {
			require.NotEmpty(t, list)
			for _, a := range list {
				for _, listen := range []bool{true, false} {
					roundTrip(t, sotype, network, familyOf(network, a, listen), a)
				}
			}
		}
		if !literalOnly(network, address) && !strings.HasPrefix(network, "unix") {
			return // net would look the host up: compare nothing more
		}
		// From here gatenet resolves with net.DefaultResolver, as Listen
		// and Dial do, and as net does (the two resolvers word a port
		// lookup's error differently); only what needs no host lookup.
		la, lerr := gatenet.ResolveListenAddr(network, address)
		list, _, err = gatenet.ResolveAddrList(ctx, nil, "listen", network, address)
		want, werr := netResolve(network, address)
		if werr != nil {
			require.Error(t, err, "net: %v", werr)
			require.Equal(t, werr.Error(), err.Error(), "resolving %s %q", network, address)
			// Resolution fails for both, so neither Listen nor Dial
			// reaches a socket: their errors must match field by field.
			if !strings.HasPrefix(network, "unix") {
				var g, n error
				if strings.HasPrefix(network, "udp") {
					_, g = gatenet.ListenPacket(network, address)
					_, n = net.ListenPacket(network, address)
				} else {
					_, g = gatenet.Listen(network, address)
					_, n = net.Listen(network, address)
				}
				require.Error(t, g)
				require.Equal(t, n.Error(), g.Error(), "listen %s %q", network, address)
				_, g = gatenet.Dial(network, address)
				_, n = net.Dial(network, address)
				require.Error(t, g)
				require.Equal(t, n.Error(), g.Error(), "dial %s %q", network, address)
			}
			return
		}
		require.NoError(t, err, "net resolved %s %q to %v", network, address, want)
		require.NoError(t, lerr)
		found := false
		for _, a := range list {
			found = found || a.String() == want.String()
		}
		require.True(t, found, "net resolved %s %q to %v; gatenet to %v", network, address, want, list)
		require.Contains(t, list, la, "the listen address is one of the resolved ones")
		require.Equal(t, want.Network(), la.Network())
	})
}

func FuzzSockaddr(f *testing.F) {
	testutil.CheckLeaks(f)
	f.Add(uint8(0), []byte{127, 0, 0, 1}, uint16(80), uint32(0), "")
	f.Add(uint8(1), []byte(net.ParseIP("fe80::1")), uint16(443), uint32(1), "")
	f.Add(uint8(1), []byte(net.ParseIP("::ffff:1.2.3.4")), uint16(0), uint32(77), "")
	f.Add(uint8(2), []byte(nil), uint16(0), uint32(0), "/tmp/sock")
	f.Add(uint8(2), []byte(nil), uint16(0), uint32(0), "@abstract")
	f.Add(uint8(2), []byte(nil), uint16(0), uint32(0), "")
	f.Fuzz(func(t *testing.T, kind uint8, addr []byte, port uint16, zone uint32, name string) {
		// net's zone cache caps a numeric zone at 0xFFFFFF (an interface
		// index is never near it), so larger ids do not survive a String.
		zone %= 0xFFFFFF
		var sa unix.Sockaddr
		var family int
		switch kind % 3 {
		case 0:
			s := &unix.SockaddrInet4{Port: int(port)}
			copy(s.Addr[:], addr)
			sa, family = s, unix.AF_INET
		case 1:
			s := &unix.SockaddrInet6{Port: int(port), ZoneId: zone}
			copy(s.Addr[:], addr)
			sa, family = s, unix.AF_INET6
		default:
			// A name the kernel can hold (sun_path is 108 bytes), spelled
			// as x/sys/unix returns it: '@' for abstract, never NUL first.
			if len(name) > 107 {
				name = name[:107]
			}
			if strings.HasPrefix(name, "\x00") {
				name = "@" + name[1:]
			}
			sa, family = &unix.SockaddrUnix{Name: name}, unix.AF_UNIX
		}
		nets := []struct {
			sotype  int
			network string
		}{{unix.SOCK_STREAM, "tcp"}, {unix.SOCK_DGRAM, "udp"}, {unix.SOCK_RAW, "ip"}}
		if family == unix.AF_UNIX {
			nets = []struct {
				sotype  int
				network string
			}{{unix.SOCK_STREAM, "unix"}, {unix.SOCK_DGRAM, "unixgram"}, {unix.SOCK_SEQPACKET, "unixpacket"}}
		}
		for _, n := range nets {
			a := gatenet.SockaddrToAddr(n.sotype, n.network, sa)
			require.NotNil(t, a)
			require.Equal(t, n.network, a.Network())
			_ = a.String()
			if u, ok := a.(*net.UnixAddr); ok && u.Name == "" {
				// Unnamed: converts to "let the kernel choose".
				got, err := gatenet.AddrToSockaddr(family, a)
				require.NoError(t, err)
				require.Nil(t, got)
				continue
			}
			got, err := gatenet.AddrToSockaddr(family, a)
			require.NoError(t, err, "%#v → %v", sa, a)
			want := sa
			if n.sotype == unix.SOCK_RAW { // a raw socket's address has no port
				want = withoutPort(want)
			}
			if s6, ok := want.(*unix.SockaddrInet6); ok && net.IP(s6.Addr[:]).Equal(net.IPv4zero) {
				// ::ffff:0.0.0.0 reads as 0.0.0.0, which an IPv6 socket takes
				// as its wildcard "::", as net's ipToSockaddrInet6 does.
				w := *s6
				w.Addr = [16]byte{}
				want = &w
			}
			require.Equal(t, kernelForm(want), kernelForm(got), "%#v → %v", sa, a)
			if family == unix.AF_UNIX || !literalOnly(n.network, a.String()) {
				// (An IPv4-mapped address with a zone prints as
				// "1.2.3.4%zone", which is no literal: net does the same.)
				continue
			}
			// The String form parses back (net's parser; an IP literal and
			// a numeric port, so no lookup) to the same kernel address.
			parsed, err := netResolve(n.network, a.String())
			require.NoError(t, err, "%#v → %q", sa, a.String())
			again, err := gatenet.AddrToSockaddr(family, parsed)
			require.NoError(t, err)
			require.Equal(t, want, again, "%#v → %q → %v", sa, a.String(), parsed)
		}
	})
}

// withoutPort is an inet sockaddr with its port zeroed.
func withoutPort(sa unix.Sockaddr) unix.Sockaddr {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		c := *sa
		c.Port = 0
		return &c
	case *unix.SockaddrInet6:
		c := *sa
		c.Port = 0
		return &c
	}
	return sa
}

// TestZoneIndexAsNet: a numeric zone converts as net's (its decimal prefix,
// capped at 0xFFFFFF), observed through the sockaddr a resolved address
// becomes.
func TestZoneIndexAsNet(t *testing.T) {
	for zone, want := range map[string]uint32{
		"":            0,
		"7":           7,
		"12abc":       12, // net's dtoi takes the decimal prefix
		"x1":          0,
		"99999999999": 0xFFFFFF,
		"4294967297":  0xFFFFFF, // not 1 (a wrap to another interface)
	} {
		if _, err := net.InterfaceByName(zone); err == nil {
			continue
		}
		sa, err := gatenet.AddrToSockaddr(unix.AF_INET6, &net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1, Zone: zone})
		require.NoError(t, err)
		require.Equal(t, want, sa.(*unix.SockaddrInet6).ZoneId, "zone %q", zone)
	}
}
