//go:build linux

package poll

import "github.com/gatenet/gatenet/pollfd"

// The syscall.RawConn hooks, as internal/poll's RawControl, RawRead and
// RawWrite.

// RawControl calls f with the descriptor under a reference.
func (fd *FD) RawControl(f func(uintptr)) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	fd.HandedOut()
	f(uintptr(fd.Sysfd))
	return nil
}

// RawRead calls f under the read lock until it returns true. A false
// return means "wait until readable, then call me again": deadlines and
// Close interrupt that wait.
func (fd *FD) RawRead(f func(uintptr) bool) error {
	if err := fd.readLock(); err != nil {
		return err
	}
	defer fd.readUnlock()
	fd.HandedOut()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return err
	}
	for {
		if f(uintptr(fd.Sysfd)) {
			return nil
		}
		if err := fd.Wait(pollfd.ModeRead); err != nil {
			return err
		}
	}
}

// RawWrite is RawRead for writability, under the write lock.
func (fd *FD) RawWrite(f func(uintptr) bool) error {
	if err := fd.writeLock(); err != nil {
		return err
	}
	defer fd.writeUnlock()
	fd.HandedOut()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return err
	}
	for {
		if f(uintptr(fd.Sysfd)) {
			return nil
		}
		if err := fd.Wait(pollfd.ModeWrite); err != nil {
			return err
		}
	}
}
