//go:build linux

package gatenet

import "github.com/gatenet/gatenet/internal/poll"

// Pollable is a gatenet connection, listener or File: anything a
// ReadyQueue can watch or InjectFaults can fault. It is sealed: only this
// package's types implement it.
//
// Listen, Dial and Accept return net.Listener and net.Conn, which do not
// have the sealed method, so q.Add(c) does not compile with a net.Conn
// ("missing method descriptor"): assert it first,
//
//	p, ok := c.(gatenet.Pollable) // ok for every conn and listener gatenet returns
//	…
//	err = q.Add(p)
//
// or use the concrete type (c.(*gatenet.TCPConn)). *File implements it
// as is.
type Pollable interface {
	Close() error
	// descriptor is the value's poll.FD, nil for a nil or zero value, so
	// that bad input is an error rather than a panic.
	descriptor() *poll.FD
}

// Each type declares descriptor itself rather than have it promoted from
// conn or listener: a promoted method panics on a nil pointer.

func (c *conn) descriptor() *poll.FD {
	if !c.ok() {
		return nil
	}
	return &c.fd.pfd
}

func (c *TCPConn) descriptor() *poll.FD {
	if c == nil {
		return nil
	}
	return c.conn.descriptor()
}

func (c *UDPConn) descriptor() *poll.FD {
	if c == nil {
		return nil
	}
	return c.conn.descriptor()
}

func (c *UnixConn) descriptor() *poll.FD {
	if c == nil {
		return nil
	}
	return c.conn.descriptor()
}

func (c *IPConn) descriptor() *poll.FD {
	if c == nil {
		return nil
	}
	return c.conn.descriptor()
}

func (l *TCPListener) descriptor() *poll.FD { return l.ln().descriptor() }

func (l *UnixListener) descriptor() *poll.FD { return l.ln().descriptor() }

func (f *File) descriptor() *poll.FD {
	if f == nil {
		return nil
	}
	return f.fd
}
