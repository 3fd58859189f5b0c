//go:build !linux

package tlstest

import (
	"context"
	"net"

	"github.com/gatenet/gatenet/faults"
)

// listen and dial are the socket layer the helpers run on: off Linux
// gatenet has no sockets, so package net's.
// Faults need gatenet's descriptors: f is ignored.
func listen(ctx context.Context, network, address string, _ *faults.Faults) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, network, address)
}

func dial(ctx context.Context, network, address string, _ *faults.Faults) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}
