//go:build linux

package gatenet

import (
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// The datagram and message calls. Unlike Read they have no zero-length
// shortcut (ReadFrom(nil) consumes a datagram, as internal/poll's does),
// and a datagram is written whole or not at all.

// ReadFrom wraps recvfrom(2).
func (fd *descriptor) ReadFrom(p []byte) (int, unix.Sockaddr, error) {
	if err := fd.readLock(); err != nil {
		return 0, nil, err
	}
	defer fd.readUnlock()
	if err := fd.prepare(pollfd.ModeRead); err != nil {
		return 0, nil, err
	}
	for {
		n, sa, err := unix.Recvfrom(fd.sysfd, p, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			n = 0
			if err == unix.EAGAIN && fd.pollable() {
				if err = fd.wait(pollfd.ModeRead); err == nil {
					continue
				}
			}
		}
		return n, sa, fd.eofError(n, err)
	}
}

// ReadMsg wraps recvmsg(2). It returns the payload and ancillary byte
// counts, the message flags and the sender.
func (fd *descriptor) ReadMsg(p, oob []byte, flags int) (n, oobn, recvflags int, sa unix.Sockaddr, err error) {
	if err := fd.readLock(); err != nil {
		return 0, 0, 0, nil, err
	}
	defer fd.readUnlock()
	if err := fd.prepare(pollfd.ModeRead); err != nil {
		return 0, 0, 0, nil, err
	}
	for {
		n, oobn, recvflags, sa, err = unix.Recvmsg(fd.sysfd, p, oob, flags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.EAGAIN && fd.pollable() {
				if err = fd.wait(pollfd.ModeRead); err == nil {
					continue
				}
			}
		}
		return n, oobn, recvflags, sa, fd.eofError(n, err)
	}
}

// WriteTo wraps sendto(2). On success it reports len(p).
func (fd *descriptor) WriteTo(p []byte, sa unix.Sockaddr) (int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	for {
		err := unix.Sendto(fd.sysfd, p, 0, sa)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN && fd.pollable() {
			if err = fd.wait(pollfd.ModeWrite); err == nil {
				continue
			}
		}
		if err != nil {
			return 0, err
		}
		return len(p), nil
	}
}

// WriteMsg wraps sendmsg(2). It reports the payload bytes sent and
// len(oob), as internal/poll's WriteMsg does.
func (fd *descriptor) WriteMsg(p, oob []byte, sa unix.Sockaddr) (int, int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, 0, err
	}
	defer fd.writeUnlock()
	if err := fd.prepare(pollfd.ModeWrite); err != nil {
		return 0, 0, err
	}
	for {
		n, err := unix.SendmsgN(fd.sysfd, p, oob, sa, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN && fd.pollable() {
			if err = fd.wait(pollfd.ModeWrite); err == nil {
				continue
			}
		}
		if err != nil {
			return n, 0, err
		}
		return n, len(oob), nil
	}
}
