//go:build linux

package gatenet

import (
	"context"
	"net"

	"golang.org/x/sys/unix"
)

// The address parsing and sockaddr conversions, for FuzzResolveAddr and
// FuzzSockaddr.

// ResolveAddrList is resolveAddrList after parseNetwork; sotype is the
// socket type the network maps to.
func ResolveAddrList(ctx context.Context, r *net.Resolver, op, network, address string) (list []net.Addr, sotype int, err error) {
	n, err := parseNetwork(network)
	if err != nil {
		return nil, 0, err
	}
	l, err := resolveAddrList(ctx, r, op, n, address, nil)
	return l, n.sotype, err
}

// ResolveListenAddr is what Listen and ListenPacket bind to.
func ResolveListenAddr(network, address string) (net.Addr, error) {
	_, a, err := resolveListenAddr(context.Background(), network, address)
	return a, err
}

var (
	FavoriteAddrFamily = favoriteAddrFamily
	AddrToSockaddr     = addrToSockaddr
	SockaddrToAddr     = sockaddrToAddr
)

// Sockaddr is x/sys/unix's, re-exported so the fuzz test names one type.
type Sockaddr = unix.Sockaddr
