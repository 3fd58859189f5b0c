//go:build linux

package tlstest

import (
	"context"
	"net"

	"github.com/gatenet/gatenet"
)

// listen and dial are the socket layer the helpers run on: gatenet's.
func listen(ctx context.Context, network, address string) (net.Listener, error) {
	var lc gatenet.ListenConfig
	return lc.Listen(ctx, network, address)
}

func dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d gatenet.Dialer
	return d.DialContext(ctx, network, address)
}
