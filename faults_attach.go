//go:build linux

package gatenet

import (
	"fmt"
	"os"
	"reflect"
	"sync"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/poll"
)

// envFaults is GATENET_FAULTS, parsed once.
var envFaults = sync.OnceValues(func() (*faults.Faults, error) {
	return faults.Parse(os.Getenv(faults.EnvVar))
})

// attachEnvFaults attaches GATENET_FAULTS's faults, if any, to fd. An
// invalid setting is every socket's error, so that it cannot go unseen.
func attachEnvFaults(fd *poll.FD) error {
	f, err := envFaults()
	if err != nil {
		return fmt.Errorf("gatenet: %s: %w", faults.EnvVar, err)
	}
	if f == nil {
		return nil
	}
	return fd.SetFaults(f)
}

// InjectFaults attaches f to x, a conn, listener or packet conn of this
// package or a pollable *File, replacing what was attached (nil detaches):
// its reads and writes from now on go through f (package faults), and a
// listener's Accept too, and the connections it accepts from now on. The
// byte counts of CloseAfter, ResetAfter and Stall start at the call.
//
// It fails for anything else, for an invalid f, and for a closed x
// (net.ErrClosed, or os.ErrClosed for a File).
func InjectFaults(x any, f *faults.Faults) error {
	fd := pollFDOf(x)
	if fd == nil {
		return fmt.Errorf("gatenet: InjectFaults: %T is not a gatenet conn, listener or file", x)
	}
	if err := fd.SetFaults(f); err != nil {
		if _, ok := x.(*File); ok && err == poll.ErrFileClosing {
			return os.ErrClosed
		}
		return err
	}
	return nil
}

// pollFDOf returns the descriptor inside x, or nil.
func pollFDOf(x any) *poll.FD {
	if v := reflect.ValueOf(x); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil // a typed nil: the promoted netFDOf would dereference it
	}
	switch v := x.(type) {
	case interface{ netFDOf() *netFD }: // the conns (through conn) and listeners
		if nfd := v.netFDOf(); nfd != nil {
			return &nfd.pfd
		}
	case *File:
		if v != nil && v.fd != nil {
			return v.fd
		}
	}
	return nil
}

// netFDOf returns the descriptor of c, nil for a nil or zero conn.
func (c *conn) netFDOf() *netFD {
	if !c.ok() {
		return nil
	}
	return c.fd
}

func (l *TCPListener) netFDOf() *netFD {
	if !l.ok() {
		return nil
	}
	return l.fd
}

func (l *UnixListener) netFDOf() *netFD {
	if !l.ok() {
		return nil
	}
	return l.fd
}
