//go:build !linux

package gatenet

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/gatenet/gatenet/faults"
)

// Off Linux gatenet delegates to package net: the names below are net's
// types and functions (the configuration structs keep gatenet's fields;
// ReusePort, Backlog, Poller and Faults are ignored). WaitRead, the context
// methods, ReadyQueue and ListenGroup are Linux-only.

type (
	TCPConn      = net.TCPConn
	UnixConn     = net.UnixConn
	UDPConn      = net.UDPConn
	IPConn       = net.IPConn
	TCPListener  = net.TCPListener
	UnixListener = net.UnixListener
)

func (lc *ListenConfig) std() *net.ListenConfig {
	std := &net.ListenConfig{Control: lc.Control, KeepAlive: lc.KeepAlive, KeepAliveConfig: lc.KeepAliveConfig}
	if lc.mptcp != mptcpDefault {
		std.SetMultipathTCP(lc.mptcp == mptcpEnabled)
	}
	return std
}

// MultipathTCP is (*net.ListenConfig).MultipathTCP.
func (lc *ListenConfig) MultipathTCP() bool { return lc.std().MultipathTCP() }

// Listen is (*net.ListenConfig).Listen.
func (lc *ListenConfig) Listen(ctx context.Context, network, address string) (net.Listener, error) {
	return lc.std().Listen(ctx, network, address)
}

// ListenPacket is (*net.ListenConfig).ListenPacket.
func (lc *ListenConfig) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	return lc.std().ListenPacket(ctx, network, address)
}

func (d *Dialer) std() *net.Dialer {
	std := &net.Dialer{Timeout: d.Timeout, Deadline: d.Deadline, LocalAddr: d.LocalAddr,
		FallbackDelay: d.FallbackDelay, KeepAlive: d.KeepAlive, KeepAliveConfig: d.KeepAliveConfig,
		Resolver: d.Resolver, Control: d.Control, ControlContext: d.ControlContext,
		DualStack: d.DualStack, Cancel: d.Cancel} //lint:ignore SA1019 passed through, as the caller set them
	if d.mptcp != mptcpDefault {
		std.SetMultipathTCP(d.mptcp == mptcpEnabled)
	}
	return std
}

// MultipathTCP is (*net.Dialer).MultipathTCP.
func (d *Dialer) MultipathTCP() bool { return d.std().MultipathTCP() }

// DialTCP is (*net.Dialer).DialTCP.
func (d *Dialer) DialTCP(ctx context.Context, network string, laddr, raddr netip.AddrPort) (*TCPConn, error) {
	return d.std().DialTCP(ctx, network, laddr, raddr)
}

// DialUDP is (*net.Dialer).DialUDP.
func (d *Dialer) DialUDP(ctx context.Context, network string, laddr, raddr netip.AddrPort) (*UDPConn, error) {
	return d.std().DialUDP(ctx, network, laddr, raddr)
}

// DialIP is (*net.Dialer).DialIP.
func (d *Dialer) DialIP(ctx context.Context, network string, laddr, raddr netip.Addr) (*IPConn, error) {
	return d.std().DialIP(ctx, network, laddr, raddr)
}

// DialUnix is (*net.Dialer).DialUnix.
func (d *Dialer) DialUnix(ctx context.Context, network string, laddr, raddr *net.UnixAddr) (*UnixConn, error) {
	return d.std().DialUnix(ctx, network, laddr, raddr)
}

// Dial is (*net.Dialer).Dial.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.std().Dial(network, address)
}

// DialContext is (*net.Dialer).DialContext.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return d.std().DialContext(ctx, network, address)
}

// The package-level functions are net's.
func Listen(network, address string) (net.Listener, error) { return net.Listen(network, address) }
func ListenPacket(network, address string) (net.PacketConn, error) {
	return net.ListenPacket(network, address)
}
func ListenTCP(network string, laddr *net.TCPAddr) (*TCPListener, error) {
	return net.ListenTCP(network, laddr)
}
func ListenUnix(network string, laddr *net.UnixAddr) (*UnixListener, error) {
	return net.ListenUnix(network, laddr)
}
func ListenUDP(network string, laddr *net.UDPAddr) (*UDPConn, error) {
	return net.ListenUDP(network, laddr)
}
func ListenUnixgram(network string, laddr *net.UnixAddr) (*UnixConn, error) {
	return net.ListenUnixgram(network, laddr)
}
func Dial(network, address string) (net.Conn, error) { return net.Dial(network, address) }
func DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout(network, address, timeout)
}
func DialTCP(network string, laddr, raddr *net.TCPAddr) (*TCPConn, error) {
	return net.DialTCP(network, laddr, raddr)
}
func DialUDP(network string, laddr, raddr *net.UDPAddr) (*UDPConn, error) {
	return net.DialUDP(network, laddr, raddr)
}
func DialUnix(network string, laddr, raddr *net.UnixAddr) (*UnixConn, error) {
	return net.DialUnix(network, laddr, raddr)
}
func ListenIP(network string, laddr *net.IPAddr) (*IPConn, error) {
	return net.ListenIP(network, laddr)
}
func DialIP(network string, laddr, raddr *net.IPAddr) (*IPConn, error) {
	return net.DialIP(network, laddr, raddr)
}
func FileConn(f *os.File) (net.Conn, error)             { return net.FileConn(f) }
func FileListener(f *os.File) (net.Listener, error)     { return net.FileListener(f) }
func FilePacketConn(f *os.File) (net.PacketConn, error) { return net.FilePacketConn(f) }

func ListenMulticastUDP(network string, ifi *net.Interface, gaddr *net.UDPAddr) (*UDPConn, error) {
	return net.ListenMulticastUDP(network, ifi, gaddr)
}

// InjectFaults needs gatenet's descriptors: off Linux it fails with
// errors.ErrUnsupported.
func InjectFaults(x Pollable, f *faults.Faults) error { return errors.ErrUnsupported }

// Pollable off Linux is anything with a Close: gatenet polls nothing
// there, so code written for Linux compiles, and InjectFaults fails.
type Pollable interface{ Close() error }

// ContextIO is the Linux build's interface of context-aware reads and
// writes and readiness waits. Off Linux nothing implements it: a type
// assertion to it compiles and fails (ok is false).
type ContextIO interface {
	ReadContext(ctx context.Context, b []byte) (int, error)
	WriteContext(ctx context.Context, b []byte) (int, error)
	WaitRead(ctx context.Context) error
	WaitWrite(ctx context.Context) error
}
