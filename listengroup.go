//go:build linux

package gatenet

import (
	"context"
	"fmt"
	"net"

	"github.com/gatenet/gatenet/pollfd"
)

// ListenGroup returns n listeners on one address, bound with SO_REUSEPORT
// so the kernel spreads incoming connections across them, for accept
// scaling across cores: run one accept loop per listener. Listener i is
// registered on shard i of the poller (lc.Poller, or the default, whose
// shard count GATENET_SHARDS sets) and the connections it accepts stay on
// that shard. With port 0 the first listener picks the port and the
// others join it. Only TCP networks are accepted.
func (lc *ListenConfig) ListenGroup(ctx context.Context, network, address string, n int) ([]net.Listener, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "listen", Net: network, Err: net.UnknownNetworkError(network)}
	}
	if n < 1 {
		return nil, &net.OpError{Op: "listen", Net: network, Err: fmt.Errorf("gatenet: ListenGroup of %d listeners", n)}
	}
	group := *lc
	group.ReusePort = true
	if group.Poller == nil {
		group.Poller = pollfd.Default()
	}
	var ls []net.Listener // grown as they open: n may be more than the descriptors allow
	for i := 0; i < n; i++ {
		l, err := group.listenShard(ctx, network, address, i)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return nil, err
		}
		if i == 0 {
			address = l.Addr().String() // the others join the chosen port
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// ListenGroup is (&ListenConfig{}).ListenGroup.
func ListenGroup(ctx context.Context, network, address string, n int) ([]net.Listener, error) {
	var lc ListenConfig
	return lc.ListenGroup(ctx, network, address, n)
}

// listenShard is Listen for TCP with the listener on the given shard and
// its accepted connections inheriting it.
func (lc *ListenConfig) listenShard(ctx context.Context, network, address string, shard int) (*TCPListener, error) {
	_, a, err := resolveListenAddr(ctx, network, address)
	if err != nil {
		return nil, err
	}
	la := a.(*net.TCPAddr)
	l, err := lc.listenTCPShard(ctx, network, la, shard)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Addr: la, Err: err}
	}
	return l, nil
}
