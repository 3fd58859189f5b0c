//go:build linux

package gatenet

import (
	"io"
	"io/fs"
	"math"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
)

// A copy between two files, as os makes it: (*os.File).ReadFrom, given
// another *os.File (or one inside an *io.LimitedReader), first tries
// copy_file_range(2) under both files' locks, the destination's first.
// Between regular files that copies in the kernel; for anything else the
// kernel refuses and the copy goes on by splice or a buffer; and a closed
// end fails it there, before a byte is read from the source, with the
// destination's "write" error whichever end is closed. A gatenet File
// copying to or from a File of either package makes the same first step
// (poll.CopyFileRange), so that it copies, and fails, as os's pair does.

// copyFileRangeFrom is os's first step of f.ReadFrom(r), for r a File of
// either package. handled false: r is no File, f appends (os makes no
// zero-copy into such a file), a gatenet end has faults attached or is
// watched, a lock was busy, or the kernel refused the pair or moved
// nothing; the copy then goes on another way.
func (f *File) copyFileRangeFrom(r io.Reader) (written int64, err error, handled bool) {
	if f.appendMode || f.fd.CopyRefused() { // faults see every byte: no copy in the kernel
		return 0, nil, false
	}
	return copyFileRange(f.fd.WriteLocked, f.fd.WriteLockedNow, r, f.name)
}

// copyFileRangeToOS is os's first step of w.ReadFrom(f), for the copy
// f.WriteTo(w) hands w: os's own takes that step only from its own Files.
func (f *File) copyFileRangeToOS(w *os.File) (written int64, err error, handled bool) {
	if osAppends(w) {
		return 0, nil, false
	}
	return copyFileRange(osLocked(w, false), nil, fileWithoutWriteTo{f}, w.Name())
}

// osAppends reports whether w's descriptor is in append mode, into which
// os makes no zero-copy (copy_file_range(2) and splice(2) refuse it).
func osAppends(w *os.File) bool {
	rc, err := w.SyscallConn()
	if err != nil {
		return false
	}
	fl, ferr := 0, error(nil)
	if rc.Control(func(fd uintptr) { fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }) != nil || ferr != nil {
		return false
	}
	return fl&unix.O_APPEND != 0
}

// copyFileRange copies from r, if it is a File (or one inside an
// *io.LimitedReader, whose N it updates), into the destination named
// name, with poll.CopyFileRange; its errors are the destination's "write"
// *fs.PathError, as os's. dst takes the destination's lock, waiting for
// it; dstNow, only if it is free (nil: the destination is an *os.File,
// and r must be gatenet's). The lock that cannot be taken only if free,
// an *os.File's, is taken first, so that the copy never waits for one
// lock holding the other.
func copyFileRange(dst, dstNow poll.Locked, r io.Reader, name string) (written int64, err error, handled bool) {
	remain := int64(math.MaxInt64)
	lr, limited := r.(*io.LimitedReader)
	if limited {
		remain, r = lr.N, lr.R
		if remain <= 0 {
			return 0, nil, true
		}
	}
	var srcFD *poll.FD
	var srcOS *os.File
	switch v := r.(type) {
	case *File:
		if v != nil {
			srcFD = v.fd
		}
	case fileWithoutWriteTo:
		srcFD = v.f.fd
	case *os.File:
		srcOS = v
	default:
		srcOS = osFileWithoutWriteTo(r)
	}
	var src poll.Locked
	srcFirst := false
	switch {
	case srcFD != nil && !srcFD.CopyRefused():
		src = srcFD.ReadLockedNow
	case srcOS != nil && dstNow != nil:
		src, dst, srcFirst = osLocked(srcOS, true), dstNow, true
	default:
		return 0, nil, false
	}
	written, err, handled = poll.CopyFileRange(dst, src, srcFirst, remain)
	if limited {
		lr.N -= written
	}
	if err == nil {
		return written, nil, handled
	}
	if err == poll.ErrFileClosing {
		err = os.ErrClosed
	}
	return written, &fs.PathError{Op: "write", Path: name, Err: wrapSyscallError("copy_file_range", err)}, handled
}

// osLocked is the poll.Locked of an *os.File: its RawConn's Read (read)
// or Write, which take its lock, waiting for it as os's copy does. A
// closed File's is poll.ErrFileClosing, as os's own lock's. Any other
// error of the RawConn (a deadline that passed, which os's lock does not
// look at) stands for the kernel's refusal: only a pipe, FIFO or device
// has a deadline, and copy_file_range(2) refuses those (EINVAL), as it
// would have in os's copy.
func osLocked(f *os.File, read bool) poll.Locked {
	return func(do func(int)) error {
		rc, err := f.SyscallConn()
		if err != nil {
			return unix.EINVAL
		}
		run := func(fd uintptr) bool { do(int(fd)); return true }
		if read {
			err = rc.Read(run)
		} else {
			err = rc.Write(run)
		}
		switch {
		case err == nil:
			return nil
		case err == osFileClosing():
			return poll.ErrFileClosing
		}
		return unix.EINVAL
	}
}

// osFileClosing is the error os's RawConn returns for a closed File: its
// internal/poll's ErrFileClosing, bare, which os's own methods turn into
// os.ErrClosed; found once, on a pipe closed for the purpose.
var osFileClosing = sync.OnceValue(func() error {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	w.Close()
	rc, err := r.SyscallConn()
	r.Close()
	if err != nil {
		return nil
	}
	return rc.Control(func(uintptr) {})
})
