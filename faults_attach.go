//go:build linux

package gatenet

import (
	"fmt"
	"net"
	"os"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/poll"
)

// InjectFaults attaches f to x, a conn, listener or packet conn of this
// package or a pollable *File, replacing what was attached (nil detaches):
// its reads and writes from now on go through f (package faults), and a
// listener's Accept too, and the connections it accepts from now on. The
// byte counts of CloseAfter, ResetAfter and Stall start at the call.
//
// It fails for a nil or zero x, for an invalid f, for a File epoll
// refused, and for a closed x (net.ErrClosed, or os.ErrClosed for a File).
func InjectFaults(x Pollable, f *faults.Faults) error {
	var fd *poll.FD
	if x != nil {
		fd = x.descriptor()
	}
	if fd == nil {
		return fmt.Errorf("gatenet: InjectFaults: %T is nil or not open", x)
	}
	if c, ok := x.(net.Conn); ok && f != nil {
		c.LocalAddr() // learnt before a fault can reset the socket (localaddr.go)
	}
	if err := fd.SetFaults(f); err != nil {
		if _, ok := x.(*File); ok && err == poll.ErrFileClosing {
			return os.ErrClosed
		}
		return err
	}
	return nil
}
