//go:build linux

package gatenet

// The rest of *os.File's method set that applies to a descriptor whatever
// its kind: WriteString, Seek, Sync, Truncate, Chmod and Chown. Each is
// the system call *os.File makes, with its errors: a pipe or a tty answers
// Seek with ESPIPE and Sync or Truncate with EINVAL, as the kernel says,
// and a regular file opened through OpenFile or NewFile behaves as under
// os. None of them waits, so none is subject to a deadline.

import (
	"io/fs"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WriteString is Write with the contents of s, as *os.File's (no copy).
func (f *File) WriteString(s string) (n int, err error) {
	return f.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// Seek sets the offset for the next Read or Write (lseek(2)), whence being
// io.SeekStart, io.SeekCurrent or io.SeekEnd, and returns the new offset.
// On a pipe, FIFO or socket it fails with ESPIPE, as *os.File's does.
func (f *File) Seek(offset int64, whence int) (int64, error) {
	if err := f.checkValid("seek"); err != nil {
		return 0, err
	}
	var off int64
	err := f.fd.Control(func(sysfd int) (err error) {
		off, err = unix.Seek(sysfd, offset, whence)
		return err
	})
	if err != nil {
		return 0, f.wrapErr("seek", err)
	}
	return off, nil
}

// Sync commits the file's contents to stable storage (fsync(2)). On a pipe
// or a tty the kernel answers EINVAL, returned as *os.File's Sync does.
func (f *File) Sync() error {
	return f.metadataOp("sync", unix.Fsync)
}

// Truncate changes the size of the file (ftruncate(2)), leaving the offset
// alone; anything but a regular file answers EINVAL.
func (f *File) Truncate(size int64) error {
	return f.metadataOp("truncate", func(sysfd int) error { return unix.Ftruncate(sysfd, size) })
}

// Chmod changes the file's mode (fchmod(2)), mapping os.FileMode's
// setuid, setgid and sticky bits as *os.File's Chmod does.
func (f *File) Chmod(mode fs.FileMode) error {
	return f.metadataOp("chmod", func(sysfd int) error { return unix.Fchmod(sysfd, syscallMode(mode)) })
}

// Chown changes the file's numeric owner and group (fchown(2)); -1 leaves
// one unchanged.
func (f *File) Chown(uid, gid int) error {
	return f.metadataOp("chown", func(sysfd int) error { return unix.Fchown(sysfd, uid, gid) })
}

// metadataOp runs one of the calls above as *os.File does: a nil File is
// os.ErrInvalid, a closed one os.ErrClosed, anything else the errno in a
// *fs.PathError named for op.
func (f *File) metadataOp(op string, call func(sysfd int) error) error {
	if err := f.checkValid(op); err != nil {
		return err
	}
	if err := f.fd.Control(call); err != nil {
		return f.wrapErr(op, err)
	}
	return nil
}
