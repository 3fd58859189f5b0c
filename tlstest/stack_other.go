//go:build !linux

package tlstest

import (
	"context"
	"net"
)

// listen and dial are the socket layer the helpers run on: off Linux
// gatenet has no sockets, so package net's.
func listen(ctx context.Context, network, address string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, network, address)
}

func dial(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}
