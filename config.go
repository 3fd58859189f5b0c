package gatenet

import (
	"context"
	"net"
	"syscall"
	"time"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/pollfd"
)

// The configuration structs, declared once for every platform. Their
// methods are per platform: listener.go and dial.go on Linux,
// net_other.go (delegating to net) elsewhere.

// ListenConfig mirrors net.ListenConfig, plus what gatenet adds. As net's,
// its TCP listeners use Multipath TCP where the kernel has it, unless
// SetMultipathTCP or GODEBUG says otherwise (mptcp.go). Off Linux it
// delegates to net.ListenConfig, and ReusePort, Backlog, Poller and
// Faults are ignored.
type ListenConfig struct {
	// Control, if not nil, is called after the socket is created and
	// before it is bound, as net's.
	Control func(network, address string, c syscall.RawConn) error
	// KeepAlive is the keep-alive period for accepted TCP connections
	// when KeepAliveConfig is not enabled: 0 means 15 s, negative turns
	// keep-alives off.
	KeepAlive time.Duration
	// KeepAliveConfig, if Enable is set, configures accepted connections.
	KeepAliveConfig net.KeepAliveConfig
	// ReusePort sets SO_REUSEPORT before binding, so several listeners
	// can share one address and the kernel balances connections.
	ReusePort bool
	// Backlog is listen(2)'s backlog; 0 means net.core.somaxconn, as net.
	Backlog int
	// Poller is the poller the listener and its accepted connections use;
	// nil means pollfd.Default().
	Poller *pollfd.Poller

	// Faults, if set, is injected into the listener's Accept
	// (AcceptErrors) and into every connection it accepts, or into the
	// packet conn (package faults); nil: GATENET_FAULTS's.
	Faults *faults.Faults

	mptcp mptcpStatus // SetMultipathTCP (mptcp.go)
}

// Dialer mirrors net.Dialer, plus the poller to register connections
// with and the faults to inject. Off Linux it delegates to net.Dialer, and
// Poller and Faults are ignored.
type Dialer struct {
	// Timeout bounds the whole dial, name resolution included.
	Timeout time.Duration
	// Deadline is an absolute time for the dial to fail by.
	Deadline time.Time
	// LocalAddr is the local address to dial from (*net.TCPAddr or
	// *net.UnixAddr); nil picks one.
	LocalAddr net.Addr
	// DualStack is net.Dialer's, ignored as there.
	//
	// Deprecated: Fast Fallback is enabled by default. To disable, set
	// FallbackDelay to a negative value.
	DualStack bool
	// FallbackDelay is how long a "tcp" dial waits for the primary
	// address family before racing the other ("happy eyeballs", RFC
	// 6555): 0 means 300 ms, negative disables the race.
	FallbackDelay time.Duration
	// KeepAlive is the keep-alive period when KeepAliveConfig is not
	// enabled: 0 means 15 s, negative turns keep-alives off.
	KeepAlive time.Duration
	// KeepAliveConfig, if Enable is set, configures the connection.
	KeepAliveConfig net.KeepAliveConfig
	// Resolver looks up names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Cancel, closed, cancels the dial, as net.Dialer's.
	//
	// Deprecated: Use DialContext instead.
	Cancel <-chan struct{}
	// Control is called after the socket is created, before connect.
	Control func(network, address string, c syscall.RawConn) error
	// ControlContext is Control with the dial's context; it takes
	// precedence over Control.
	ControlContext func(ctx context.Context, network, address string, c syscall.RawConn) error
	// Poller is the poller for the connection; nil means pollfd.Default().
	Poller *pollfd.Poller

	// Faults, if set, is injected into the connect (DialErrors) and into
	// the connection dialled (package faults); nil: GATENET_FAULTS's.
	Faults *faults.Faults

	mptcp mptcpStatus // SetMultipathTCP (mptcp.go)
}

// mptcpStatus is the tristate net keeps in Dialer and ListenConfig: the
// default (GODEBUG, then net's built-in choice), or set on or off.
type mptcpStatus uint8

const (
	mptcpDefault mptcpStatus = iota
	mptcpEnabled
	mptcpDisabled
)

// SetMultipathTCP makes TCP listeners try Multipath TCP first (socket(2)
// with IPPROTO_MPTCP), falling back to plain TCP on any error, or not; it
// overrides GODEBUG, as net's.
func (lc *ListenConfig) SetMultipathTCP(use bool) { lc.mptcp.set(use) }

// SetMultipathTCP makes TCP dials try Multipath TCP first (socket(2) with
// IPPROTO_MPTCP), falling back to plain TCP on any error, or not; it
// overrides GODEBUG, as net's.
func (d *Dialer) SetMultipathTCP(use bool) { d.mptcp.set(use) }

func (m *mptcpStatus) set(use bool) {
	if use {
		*m = mptcpEnabled
	} else {
		*m = mptcpDisabled
	}
}
