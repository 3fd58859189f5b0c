//go:build linux

package tlstest

import (
	"context"
	"net"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
)

// listen and dial are the socket layer the helpers run on: gatenet's.
// f, if not nil, is injected into the connections (package faults).
func listen(ctx context.Context, network, address string, f *faults.Faults) (net.Listener, error) {
	lc := gatenet.ListenConfig{Faults: f}
	return lc.Listen(ctx, network, address)
}

func dial(ctx context.Context, network, address string, f *faults.Faults) (net.Conn, error) {
	d := gatenet.Dialer{Faults: f}
	return d.DialContext(ctx, network, address)
}
