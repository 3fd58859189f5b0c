//go:build linux

package gatenet

import (
	"net"
	"syscall"
)

// sockRawConn is a socket's syscall.RawConn, shaped as net's: errors come
// in *net.OpError with ops "raw-control", "raw-read", "raw-write".
type sockRawConn struct{ fd *netFD }

func newRawConn(fd *netFD) syscall.RawConn { return &sockRawConn{fd} }

// Control calls f with the socket's descriptor (no locks beyond a reference).
func (c *sockRawConn) Control(f func(uintptr)) error {
	if err := c.fd.pfd.RawControl(f); err != nil {
		return &net.OpError{Op: "raw-control", Net: c.fd.net, Addr: c.fd.localAddr(), Err: err}
	}
	return nil
}

// Read calls f until it returns true, waiting for readability in between.
func (c *sockRawConn) Read(f func(uintptr) bool) error {
	if err := c.fd.pfd.RawRead(f); err != nil {
		return &net.OpError{Op: "raw-read", Net: c.fd.net, Source: c.fd.localAddr(), Addr: c.fd.raddr, Err: err}
	}
	return nil
}

// Write calls f until it returns true, waiting for writability in between.
// A datagram socket of a synctest bubble wakes the bubble's readers that
// f's send may have reached (synctest_dgram.go).
func (c *sockRawConn) Write(f func(uintptr) bool) error {
	var err error
	if c.fd.bubbleDgram {
		to := c.fd.bubbleSendingRaw()
		err = c.fd.pfd.RawWrite(f)
		c.fd.bubbleSentRaw(to, err)
	} else {
		err = c.fd.pfd.RawWrite(f)
	}
	if err != nil {
		return &net.OpError{Op: "raw-write", Net: c.fd.net, Source: c.fd.localAddr(), Addr: c.fd.raddr, Err: err}
	}
	return nil
}

// listenerRawConn is a listener's RawConn: Read and Write are EINVAL, as
// net's rawListener.
type listenerRawConn struct{ sockRawConn }

func (l *listenerRawConn) Read(func(uintptr) bool) error  { return syscall.EINVAL }
func (l *listenerRawConn) Write(func(uintptr) bool) error { return syscall.EINVAL }
