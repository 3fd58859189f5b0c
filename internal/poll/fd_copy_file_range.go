//go:build linux

package poll

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"
)

// copy_file_range(2) moves bytes between two regular files inside the
// kernel. os's (*os.File).ReadFrom tries it first, whatever the files
// are, when the source is another *os.File; CopyFileRange makes the same
// try with the same rules (Go's internal/poll/copy_file_range_*.go), so
// that a gatenet File copies, and fails, as an *os.File does: both ends'
// locks are taken, the destination's first, before anything is read, so
// a closed end fails the copy with no byte taken from the source.

// maxCopyFileRangeRound is the most one call moves: Linux's MAX_RW_COUNT.
const maxCopyFileRangeRound = 0x7ffff000

// copyFileRangeWorks says whether the kernel is 5.3 or later: before, a
// copy across file systems could fail silently, and Go does not use the
// call there.
var copyFileRangeWorks = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var v [2]int // major, minor
	i := 0
	for _, c := range u.Release {
		if c >= '0' && c <= '9' {
			v[i] = v[i]*10 + int(c-'0')
			continue
		}
		if c != '.' || i == 1 {
			break
		}
		i = 1
	}
	return v[0] > 5 || v[0] == 5 && v[1] >= 3
})

// Locked runs its argument with one end's descriptor under that end's
// lock, or returns the lock's error (ErrFileClosing for a closed end,
// errLockBusy from a lock taken only if free): FD.WriteLocked,
// FD.ReadLockedNow, FD.WriteLockedNow, or an *os.File's through its
// RawConn.
type Locked func(do func(sysfd int)) error

// CopyFileRange copies up to remain bytes from src to dst with
// copy_file_range(2), in rounds under both ends' locks, as os's
// (*os.File).ReadFrom does before any other way. os takes dst's lock
// first; so does CopyFileRange, unless srcFirst: the caller orders the
// locks so that the one it cannot take only if free (an *os.File's) is
// taken first, and gatenet's rule holds, that a copy never waits for one
// lock holding the other. A lock's error ends the copy, handled, before a
// byte moves: the caller reports it as the destination's, as os does
// whichever end is closed. handled is false when a lock is busy
// (errLockBusy), when the kernel refused the pair before a byte moved
// (anything but two regular files: EINVAL; another file system: EXDEV;
// …), or when nothing moved at all (at the source's end, or on a file
// system where the call does nothing): the copy then goes on another way.
func CopyFileRange(dst, src Locked, srcFirst bool, remain int64) (written int64, err error, handled bool) {
	if !copyFileRangeWorks() {
		return 0, nil, false
	}
	for remain > 0 {
		n, e := copyFileRangeRound(dst, src, srcFirst, int(min(remain, maxCopyFileRangeRound)))
		if n > 0 {
			remain -= n
			written += n
		}
		handled, err = copyFileRangeHandled(e, n, written)
		if n == 0 || !handled || err != nil {
			return written, err, handled
		}
	}
	return written, nil, true
}

// copyFileRangeRound is one copy_file_range(2) of up to max bytes from
// and to the ends' current offsets, which is why it holds both locks.
func copyFileRangeRound(dst, src Locked, srcFirst bool, max int) (n int64, err error) {
	var srcfd, dstfd int
	outer, inner := dst, src
	outerFd, innerFd := &dstfd, &srcfd
	if srcFirst {
		outer, inner = src, dst
		outerFd, innerFd = &srcfd, &dstfd
	}
	lerr := outer(func(fd int) {
		*outerFd = fd
		lerr := inner(func(fd int) {
			*innerFd = fd
			for {
				m, e := unix.CopyFileRange(srcfd, nil, dstfd, nil, max, 0)
				if e == unix.EINTR {
					continue
				}
				if e != nil {
					m = 0
				}
				n, err = int64(m), e
				return
			}
		})
		if lerr != nil {
			err = lerr
		}
	})
	if lerr != nil {
		return 0, lerr
	}
	return n, err
}

// copyFileRangeHandled is Go's handleCopyFileRangeErr for Linux: which
// results mean the copy was made here, and with what error.
func copyFileRangeHandled(err error, copied, written int64) (bool, error) {
	switch err {
	case unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EIO, unix.EOPNOTSUPP, unix.EPERM, errLockBusy:
		return false, nil
	case nil:
		if copied == 0 && written == 0 {
			return false, nil
		}
	}
	return true, err
}

// errLockBusy is a Locked's error when another goroutine holds that
// lock: CopyFileRange takes it as a refusal, and the copy goes on another
// way, which waits for the lock holding nothing of the other end's.
var errLockBusy = errors.New("lock held by another goroutine")

// ReadLockedNow runs do with fd's descriptor under its read lock if that
// is free (errLockBusy if another reader holds it): a source's Locked for
// CopyFileRange, taken while the other end's lock is held.
func (fd *FD) ReadLockedNow(do func(sysfd int)) error {
	return fd.lockedNow(true, do)
}

// WriteLocked runs do with fd's descriptor under its write lock, waiting
// for it: a destination's Locked for CopyFileRange, taken first.
func (fd *FD) WriteLocked(do func(sysfd int)) error {
	if err := fd.writeLock(); err != nil {
		return err
	}
	defer fd.writeUnlock()
	do(fd.Sysfd)
	return nil
}

// WriteLockedNow is WriteLocked if fd's write lock is free (errLockBusy if
// another writer holds it): a destination's Locked taken while the other
// end's lock is held.
func (fd *FD) WriteLockedNow(do func(sysfd int)) error {
	return fd.lockedNow(false, do)
}

// lockedNow runs do under fd's read or write lock if it is free.
func (fd *FD) lockedNow(read bool, do func(sysfd int)) error {
	if err := fd.lockContext(tryNow, read); err != nil {
		if err == tryNow.Err() {
			return errLockBusy
		}
		return err
	}
	if read {
		defer fd.readUnlock()
	} else {
		defer fd.writeUnlock()
	}
	do(fd.Sysfd)
	return nil
}
