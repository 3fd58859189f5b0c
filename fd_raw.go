//go:build linux

package gatenet

import "github.com/gatenet/gatenet/pollfd"

// The syscall.RawConn hooks, as internal/poll's RawControl, RawRead and
// RawWrite.

// RawControl calls f with the descriptor under a reference.
func (fd *descriptor) RawControl(f func(uintptr)) error {
	if err := fd.incref(); err != nil {
		return err
	}
	defer fd.decref()
	f(uintptr(fd.sysfd))
	return nil
}

// RawRead calls f under the read lock until it returns true. A false
// return means "wait until readable, then call me again": deadlines and
// Close interrupt that wait.
func (fd *descriptor) RawRead(f func(uintptr) bool) error {
	if err := fd.readLock(); err != nil {
		return err
	}
	defer fd.readUnlock()
	if err := fd.prepare(pollfd.ModeRead); err != nil {
		return err
	}
	for {
		if f(uintptr(fd.sysfd)) {
			return nil
		}
		if err := fd.wait(pollfd.ModeRead); err != nil {
			return err
		}
	}
}

// RawWrite is RawRead for writability, under the write lock.
func (fd *descriptor) RawWrite(f func(uintptr) bool) error {
	if err := fd.writeLock(); err != nil {
		return err
	}
	defer fd.writeUnlock()
	if err := fd.prepare(pollfd.ModeWrite); err != nil {
		return err
	}
	for {
		if f(uintptr(fd.sysfd)) {
			return nil
		}
		if err := fd.wait(pollfd.ModeWrite); err != nil {
			return err
		}
	}
}
