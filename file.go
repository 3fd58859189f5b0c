//go:build linux

package gatenet

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// File is *os.File's counterpart for pollable descriptors — pipes, FIFOs,
// ttys, character devices, eventfds — driven by gatenet's poller: reads
// and writes honour deadlines and Close unblocks them, for every descriptor
// epoll accepts, including ones *os.File leaves blocking (os.NewFile on a
// blocking fd). Errors are those *os.File returns: *fs.PathError with the
// op ("read", "write", "close") and name, os.ErrClosed after Close,
// os.ErrDeadlineExceeded on a deadline, bare io.EOF.
//
// A descriptor epoll refuses (a regular file or directory) works in
// blocking mode, and its SetDeadline returns os.ErrNoDeadline, exactly as
// *os.File.
//
// It has *os.File's methods except Chdir, ReadDir, Readdir and
// Readdirnames, plus ContextIO's; it is its own type, not an *os.File,
// and cannot go where an *os.File is required.
//
// In a testing/synctest bubble, the two ends of a Pipe made there park
// durably (in fake time) while both stay gatenet's: once either end's
// number is handed out (Fd, a dup, a child's ExtraFiles) or it is used
// from outside the bubble, both wait as os's pipes do. A File from
// NewFile or OpenFile never parks durably.
type File struct {
	fd   *poll.FD
	name string
	// nonblock: gatenet set O_NONBLOCK itself, so Fd restores blocking mode
	// (as *os.File does for the descriptors it made non-blocking).
	nonblock bool
	// setupErr: an invalid GATENET_ environment variable, every
	// operation's error (NewFile has none to return).
	setupErr error
	// appendMode: opened with O_APPEND, so WriteAt is refused, as by os.
	appendMode bool
}

// errWriteAtInAppendMode is os's error (same text) for WriteAt on a file
// opened with O_APPEND, where pwrite(2) would ignore the offset.
var errWriteAtInAppendMode = errors.New("os: invalid use of WriteAt on file opened with O_APPEND")

// NewFile returns a File for the descriptor fd, as os.NewFile does, but
// puts it in non-blocking mode and registers it with the poller, so every
// pollable descriptor gets deadlines and close-unblock (os.NewFile polls
// only descriptors that are already non-blocking). A descriptor epoll
// refuses stays as it was, in blocking mode. One NewFile made
// non-blocking is made blocking again when the File closes, for the other
// holders of its open file description (a terminal shared with the
// shell, a dup), as Fd makes it at once; if another File from NewFile
// shares that description, when the last of them closes. NewFile returns nil if fd is
// negative. A descriptor that is not open gives a File whose operations
// fail with EBADF, as with os.NewFile. While a GATENET_ environment
// variable is invalid, every operation but Close, Fd and Name fails with
// its error, NewFile having none to return.
func NewFile(fd uintptr, name string) *File {
	sysfd := int(fd)
	if sysfd < 0 {
		return nil
	}
	flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
	var f *File
	switch {
	case err != nil: // not open: its operations fail as os's do
		f, err = newFile(pollfd.Default(), sysfd, name, fileBlocking, false)
	case flags&unix.O_NONBLOCK != 0:
		f, err = newFile(pollfd.Default(), sysfd, name, fileNonblocking, false)
		if f.fd.Pollable() {
			f.fd.TrackShared() // another File may have made it so, to restore at its close
		}
	case unix.SetNonblock(sysfd, true) != nil:
		f, err = newFile(pollfd.Default(), sysfd, name, fileBlocking, false)
	default:
		f, err = newFile(pollfd.Default(), sysfd, name, fileMadeNonblocking, false)
		if f.nonblock {
			// Its open file description may be shared (stdin, a dup): put
			// it back as it came, at the last close, or leave that to the
			// last File on it (internal/poll's fd_nonblock.go).
			f.fd.RestoreBlockingOnClose()
			f.fd.TrackShared()
		}
	}
	f.setupErr = err
	f.appendMode = flags >= 0 && flags&unix.O_APPEND != 0 // as os.NewFile
	return f
}

// OpenFile opens the named file, as os.OpenFile, for FIFOs, ttys and
// character devices that need deadlines. It wraps open(2) with O_CLOEXEC;
// unless flag has O_NONBLOCK, the descriptor is made non-blocking for
// polling, and restored to blocking if epoll refuses it (a regular file or
// a directory), as os does.
func OpenFile(name string, flag int, perm os.FileMode) (*File, error) {
	var sysfd int
	var err error
	for {
		sysfd, err = unix.Open(name, flag|unix.O_CLOEXEC, syscallMode(perm))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	setup := fileNonblocking
	if flag&unix.O_NONBLOCK == 0 {
		if err := unix.SetNonblock(sysfd, true); err != nil {
			unix.Close(sysfd)
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		setup = fileMadeNonblocking
	}
	f, err := newFile(pollfd.Default(), sysfd, name, setup, true)
	if err != nil {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f.appendMode = flag&unix.O_APPEND != 0 // as os.OpenFile
	return f, nil
}

// fileSetup is what a new File does with its descriptor's blocking mode.
type fileSetup uint8

const (
	// fileBlocking: not registered, left in blocking mode (a descriptor
	// that is not open, or that refused O_NONBLOCK).
	fileBlocking fileSetup = iota
	// fileNonblocking: registered; the descriptor came non-blocking.
	fileNonblocking
	// fileMadeNonblocking: registered; gatenet set O_NONBLOCK, so it
	// restores blocking mode if epoll refuses the descriptor, and in Fd,
	// as *os.File does.
	fileMadeNonblocking
)

// newFile makes a File owning sysfd, registered with poller unless setup
// is fileBlocking, with GATENET_FAULTS's faults attached if it is
// pollable. A registration epoll refuses (EPERM: a regular file or a
// directory) means blocking I/O, as os.newFile decides, not an error. Any
// other failure to register (the poller could not start for want of
// descriptors, EMFILE; epoll's max_user_watches, ENOSPC) is an error with
// mustPoll: a pipe or FIFO made for deadlines and Close-unblocks-Read
// must not quietly lack them; without it (NewFile, which returns no
// error) the File is blocking, as os's. The other error is an invalid
// GATENET_ environment variable's (envError). The File is returned with
// the error, for the caller to close or to keep.
func newFile(poller *pollfd.Poller, sysfd int, name string, setup fileSetup, mustPoll bool) (*File, error) {
	var fd *poll.FD
	var err error
	if setup == fileBlocking {
		fd = poll.NewBlockingFile(sysfd)
	} else {
		fd, err = poll.NewFile(sysfd, poller)
	}
	f := &File{fd: fd, name: name, nonblock: setup == fileMadeNonblocking}
	if regErr := err; mustPoll && regErr != nil && !errors.Is(regErr, unix.EPERM) {
		if err = envError(regErr); err == nil {
			err = regErr
		}
		return f, err
	}
	if err = envError(err); err != nil {
		return f, err
	}
	if !fd.Pollable() {
		if f.nonblock {
			unix.SetNonblock(sysfd, false)
			f.nonblock = false
		}
		return f, nil
	}
	return f, attachEnvFaults(fd)
}

// syscallMode turns an os.FileMode into open(2)'s mode bits, as os does.
func syscallMode(m os.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		o |= unix.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		o |= unix.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		o |= unix.S_ISVTX
	}
	return o
}

// checkValid is op's error before it starts: os.ErrInvalid for a nil
// File, as os's, or the File's set-up error.
func (f *File) checkValid(op string) error {
	if f == nil {
		return os.ErrInvalid
	}
	if f.setupErr != nil {
		return &fs.PathError{Op: op, Path: f.name, Err: f.setupErr}
	}
	return nil
}

// wrapErr shapes an fd-layer error as *os.File does.
func (f *File) wrapErr(op string, err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if err == poll.ErrFileClosing {
		err = os.ErrClosed
	}
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

// Read reads up to len(b) bytes, waiting for data, its read deadline or
// Close. At end of file it returns 0, io.EOF.
func (f *File) Read(b []byte) (int, error) {
	if err := f.checkValid("read"); err != nil {
		return 0, err
	}
	n, err := f.fd.Read(b)
	return n, f.wrapErr("read", err)
}

// Write writes all of b, waiting for space as needed; on a deadline or
// Close it returns the count written so far with the error.
func (f *File) Write(b []byte) (int, error) {
	if err := f.checkValid("write"); err != nil {
		return 0, err
	}
	n, err := f.fd.Write(b)
	if n < 0 {
		n = 0
	}
	if n != len(b) && err == nil {
		err = io.ErrShortWrite
	}
	// *os.File re-raises SIGPIPE for EPIPE on descriptors 1 and 2 (through
	// a runtime hook out of reach here); a File returns EPIPE in every
	// case, as a net conn does.
	return n, f.wrapErr("write", err)
}

// ReadAt reads len(b) bytes from offset off (pread(2)), as *os.File.
func (f *File) ReadAt(b []byte, off int64) (n int, err error) {
	if err := f.checkValid("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	for len(b) > 0 {
		m, e := f.fd.Pread(b, off)
		if e != nil {
			err = f.wrapErr("read", e)
			break
		}
		n += m
		b = b[m:]
		off += int64(m)
	}
	return n, err
}

// WriteAt writes b at offset off (pwrite(2)), as *os.File: it is refused
// on a file opened with O_APPEND, and an empty b makes no syscall.
func (f *File) WriteAt(b []byte, off int64) (n int, err error) {
	if err := f.checkValid("write"); err != nil {
		return 0, err
	}
	if f.appendMode {
		return 0, errWriteAtInAppendMode
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "writeat", Path: f.name, Err: errors.New("negative offset")}
	}
	for len(b) > 0 {
		m, e := f.fd.Pwrite(b, off)
		if e != nil {
			err = f.wrapErr("write", e)
			break
		}
		n += m
		b = b[m:]
		off += int64(m)
	}
	return n, err
}

// Close closes the File. Blocked reads and writes return os.ErrClosed; a
// second Close returns a *fs.PathError wrapping os.ErrClosed.
func (f *File) Close() error {
	if f == nil {
		return os.ErrInvalid
	}
	if f.fd == nil { // a zero File, which no constructor made
		return syscall.EINVAL // as a zero os.File's Close
	}
	if err := f.fd.Close(); err != nil {
		if err == poll.ErrFileClosing {
			err = os.ErrClosed
		}
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// Fd returns the descriptor number. As with *os.File, if gatenet made the
// descriptor non-blocking, Fd puts it back in blocking mode: deadlines and
// Close can no longer interrupt a blocked Read or Write. It returns
// ^uintptr(0) after Close.
func (f *File) Fd() uintptr {
	if f == nil {
		return ^uintptr(0)
	}
	if f.nonblock {
		f.fd.SetBlocking()
	}
	if f.fd.Incref() != nil {
		return ^uintptr(0)
	}
	defer f.fd.Decref()
	f.fd.HandedOut()
	return uintptr(f.fd.Sysfd)
}

// Name returns the name the File was created with.
func (f *File) Name() string { return f.name }

// Stat returns the FileInfo of the descriptor (fstat(2)). Its Sys is a
// *syscall.Stat_t, as for *os.File.
func (f *File) Stat() (os.FileInfo, error) {
	if err := f.checkValid("stat"); err != nil {
		return nil, err
	}
	st := new(fileStat)
	if err := f.fd.Fstat(&st.sys); err != nil {
		return nil, f.wrapErr("stat", err)
	}
	st.fill(f.name)
	return st, nil
}

// SetDeadline sets the read and write deadlines, as *os.File: a zero time
// clears them; a past time makes blocked and future I/O fail with
// os.ErrDeadlineExceeded. It returns os.ErrNoDeadline for a descriptor
// epoll refused, and the bare "use of closed file" error after Close.
func (f *File) SetDeadline(t time.Time) error {
	return f.setDeadline(t, pollfd.ModeReadWrite)
}

// SetReadDeadline sets the deadline for Read (and ReadFrom on the File).
func (f *File) SetReadDeadline(t time.Time) error {
	return f.setDeadline(t, pollfd.ModeRead)
}

// SetWriteDeadline sets the deadline for Write; a Write that times out
// reports how much it wrote.
func (f *File) SetWriteDeadline(t time.Time) error {
	return f.setDeadline(t, pollfd.ModeWrite)
}

func (f *File) setDeadline(t time.Time, mode pollfd.Mode) error {
	if err := f.checkValid("SetDeadline"); err != nil {
		return err
	}
	return f.fd.SetDeadline(t, mode)
}

// SyscallConn returns a syscall.RawConn for the File, as *os.File's.
func (f *File) SyscallConn() (syscall.RawConn, error) {
	if err := f.checkValid("SyscallConn"); err != nil {
		return nil, err
	}
	return rawConn{f.fd}, nil
}

// rawConn is the File's syscall.RawConn; like *os.File's, its errors are
// not wrapped.
type rawConn struct{ fd *poll.FD }

func (c rawConn) Control(f func(uintptr)) error    { return c.fd.RawControl(f) }
func (c rawConn) Read(f func(uintptr) bool) error  { return c.fd.RawRead(f) }
func (c rawConn) Write(f func(uintptr) bool) error { return c.fd.RawWrite(f) }

// ReadFrom copies from r into the File until EOF, as io.ReaderFrom.
// From another File (gatenet's or os's) it first tries
// copy_file_range(2) under both Files' locks, as os does: between
// regular files the kernel copies, and a closed end fails the copy there
// with the File's "write" *fs.PathError before anything is read. When
// both the File and r are pipes or gatenet stream sockets, or r is
// a stream socket (gatenet's or net's) and the File a pipe or a regular
// file not opened for appending (as os's spliceToFile), the bytes move
// with splice(2) and never enter user space; between two of gatenet's
// with a pipe among them a byte leaves r only into the File. The errors
// are os's: between two Files (which os copies through a buffer) the
// failing end's own Read or Write error, from a socket a "write"
// *fs.PathError around splice's error, the socket's own included.
func (f *File) ReadFrom(r io.Reader) (int64, error) {
	if err := f.checkValid("write"); err != nil {
		return 0, err
	}
	if n, err, handled := f.copyFileRangeFrom(r); handled { // from a File, as os's first step
		return n, err
	}
	if n, err, handled := f.spliceFromStdConn(r); handled {
		return n, err
	}
	dst := spliceEnd(f)
	if dst == nil && !f.appendMode && connSource(r) {
		dst = f.fd
	}
	if dst != nil {
		if n, err, handled, srcErr, src := spliceFrom(dst, r); handled {
			if sf, ok := src.(*File); ok {
				return n, fileCopyError(sf, f, err, srcErr)
			}
			return n, f.wrapErr("write", wrapSyscallError("splice", err))
		}
	}
	return io.Copy(fileWithoutReadFrom{f}, r)
}

// connSource reports whether r, or the reader inside it if it is an
// *io.LimitedReader, is a gatenet stream socket splice(2) can read.
func connSource(r io.Reader) bool {
	if lr, ok := r.(*io.LimitedReader); ok {
		r = lr.R
	}
	if _, isFile := r.(*File); isFile {
		return false
	}
	return spliceEnd(r) != nil
}

// WriteTo copies the File to w until EOF, as io.WriterTo; with splice(2)
// when both are pipes or gatenet stream sockets, and with sendfile(2)
// from a regular file or character device to a gatenet stream socket,
// or from a regular file to one of net's, as os. The errors are the standard library's for the pair: where it
// copies through a buffer the failing end's Read or Write error; for a
// TCP conn, inside its ReadFrom's "readfrom" error, since os hands the
// copy to the conn's ReadFrom (where gatenet's splices); for sendfile a
// "read" *fs.PathError around its error.
func (f *File) WriteTo(w io.Writer) (int64, error) {
	if err := f.checkValid("read"); err != nil {
		return 0, err
	}
	switch d := w.(type) { // into a File: os's copy hands it to the File's ReadFrom
	case *File:
		if n, err, handled := d.copyFileRangeFrom(fileWithoutWriteTo{f}); handled {
			return n, err
		}
	case *os.File:
		if n, err, handled := f.copyFileRangeToOS(d); handled {
			return n, err
		}
	}
	if u, ok := w.(*UnixConn); ok && spliceEnd(u) != nil && !f.fd.Pollable() {
		// os's writeTo sends to a Unix stream socket itself; to TCP, the
		// conn's ReadFrom (below, through io.Copy) does.
		if n, err, handled := u.fd.sendFile(fileWithoutWriteTo{f}); handled {
			return n, f.wrapErr("read", err)
		}
	}
	if n, err, handled := f.sendToStdConn(w); handled {
		return n, err
	}
	if src := spliceEnd(f); src != nil {
		switch d := w.(type) {
		case *TCPConn:
			return d.ReadFrom(f)
		case *UnixConn, *File:
			if dst := spliceEnd(w); dst != nil {
				if n, err, handled, srcErr := poll.SpliceEnds(dst, src, 0); handled {
					if wf, ok := d.(*File); ok {
						return n, fileCopyError(f, wf, err, srcErr)
					}
					return n, pipeToConnError(d.(*UnixConn).fd, f, err, srcErr)
				}
			}
		}
	}
	return io.Copy(w, fileWithoutWriteTo{f})
}

// These hide ReadFrom and WriteTo so io.Copy does not recurse into them.
type fileWithoutReadFrom struct{ f *File }

func (w fileWithoutReadFrom) Write(b []byte) (int, error) { return w.f.Write(b) }

type fileWithoutWriteTo struct{ f *File }

func (r fileWithoutWriteTo) Read(b []byte) (int, error) { return r.f.Read(b) }

// SyscallConn lets a net.Conn's ReadFrom send the File with sendfile(2),
// as it sends the wrapper *os.File's WriteTo hands it: for a regular file
// or a character device; any other File it refuses, so that net copies
// through a buffer (a non-blocking pipe's EAGAIN would read as the
// socket's).
func (r fileWithoutWriteTo) SyscallConn() (syscall.RawConn, error) {
	st, err := r.f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() && st.Mode()&fs.ModeCharDevice == 0 {
		return nil, errors.ErrUnsupported
	}
	return r.f.SyscallConn()
}

// The context-aware and readiness calls gatenet adds to *os.File's method
// set, as it adds them to net's (context.go says how a context bounds a
// wait).

// ReadContext is Read, also returning when ctx is done: then with a
// *fs.PathError (Op "read") wrapping ctx.Err(), not os.ErrDeadlineExceeded.
// A context already done fails only where the read would park.
func (f *File) ReadContext(ctx context.Context, b []byte) (int, error) {
	if err := f.checkValid("read"); err != nil {
		return 0, err
	}
	n, err := f.fd.ReadContext(orBackground(ctx), b)
	return n, f.wrapErr("read", err)
}

// WriteContext is Write, also returning when ctx is done, with the count
// written so far and a *fs.PathError (Op "write") wrapping ctx.Err().
func (f *File) WriteContext(ctx context.Context, b []byte) (int, error) {
	if err := f.checkValid("write"); err != nil {
		return 0, err
	}
	n, err := f.fd.WriteContext(orBackground(ctx), b)
	return n, f.wrapErr("write", err)
}

// WaitRead parks until the File is readable (data, or end of file), ctx is
// done, the read deadline passes or the File is closed; it consumes
// nothing. A descriptor epoll refused (a regular file) is always ready. A
// done context gives a *fs.PathError (Op "read") wrapping ctx.Err(), at
// once if it was done before the call, whatever the descriptor.
func (f *File) WaitRead(ctx context.Context) error {
	if err := f.checkValid("read"); err != nil {
		return err
	}
	return f.wrapErr("read", f.fd.WaitReadable(orBackground(ctx)))
}

// WaitWrite parks until the File can take data without blocking, ctx is
// done (a *fs.PathError, Op "write", wrapping ctx.Err()), the write
// deadline passes or the File is closed.
func (f *File) WaitWrite(ctx context.Context) error {
	if err := f.checkValid("write"); err != nil {
		return err
	}
	return f.wrapErr("write", f.fd.WaitWritable(orBackground(ctx)))
}
