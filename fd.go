//go:build linux

package gatenet

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// descriptor is the descriptor every conn, listener and file is built on:
// internal/poll's FD with gatenet's poller underneath. It owns sysfd.
//
// Lifetime: every operation holds a reference (fdMutex, fd_mutex.go) for
// as long as it uses sysfd; Read-side operations also hold the read lock
// and Write-side ones the write lock, so there is one reader and one writer
// at a time and so at most one waiter per gate. Close sets the closed bit,
// unblocks every waiter (pollfd.Desc.Unblock) and drops its reference; the
// last reference to go runs destroy: EPOLL_CTL_DEL, then close(2). Close
// itself returns only after destroy has run (unless the descriptor is in
// blocking mode, where a syscall may be stuck in the kernel), so the fd
// number is never reused while a syscall on it runs.
//
// Each I/O loop is internal/poll's: lock → prepare (fails fast on close,
// expired deadline) → syscall → EAGAIN → wait → retry, EINTR retried.
type descriptor struct {
	mu    fdMutex
	sysfd int
	pd    *pollfd.Desc // nil when epoll refused the descriptor: blocking I/O

	isFile        bool // errors are the file kind (os.ErrClosed, not net.ErrClosed)
	isStream      bool // reads and writes are capped at maxRW per syscall
	zeroReadIsEOF bool // a 0-byte read means EOF (everything but datagrams)

	isBlocking atomic.Bool // O_NONBLOCK cleared: Close neither waits nor interrupts
}

// anyShard lets the poller choose the shard (round-robin).
const anyShard = -1

// maxRW caps one read or write on a stream, as internal/poll does, so that
// a huge buffer is not handed to the kernel in one call.
const maxRW = 1 << 30

// newFileDescriptor wraps sysfd as a file (os's errors: "use of closed
// file"; a stream whose 0-byte read is EOF) and registers it with p on any
// shard, as os's newFile does. pollable false, or a registration epoll
// refuses (EPERM: a regular file or directory), leaves it in blocking
// mode; the registration error is returned alongside the usable
// descriptor, as internal/poll's Init does, and a file treats it as
// harmless.
func newFileDescriptor(sysfd int, p *pollfd.Poller, pollable bool) (*descriptor, error) {
	fd := &descriptor{isFile: true, isStream: true, zeroReadIsEOF: true}
	return fd, fd.init(sysfd, p, anyShard, pollable)
}

// initSocket makes a zero descriptor, in place, the socket sysfd of type
// sotype (net's errors; capped reads and writes on a stream; a 0-byte
// read is EOF but on a datagram or raw socket, as net's newFD decides),
// registered with p on shard (pollfd.Poller.OpenShard; anyShard spreads).
// In place because a socket's descriptor lives in its netFD, one
// allocation for both (an idle server holds one per connection). The
// registration error is returned; a socket treats it as fatal.
func (fd *descriptor) initSocket(sysfd, sotype int, p *pollfd.Poller, shard int) error {
	fd.isStream = sotype == unix.SOCK_STREAM
	fd.zeroReadIsEOF = sotype != unix.SOCK_DGRAM && sotype != unix.SOCK_RAW
	return fd.init(sysfd, p, shard, true)
}

// init registers sysfd with p, on shard, if pollable; the kind fields
// (isFile, isStream, zeroReadIsEOF) are already set.
func (fd *descriptor) init(sysfd int, p *pollfd.Poller, shard int, pollable bool) error {
	fd.sysfd = sysfd
	var err error
	switch {
	case pollable && shard == anyShard:
		fd.pd, err = p.Open(sysfd)
	case pollable:
		fd.pd, err = p.OpenShard(sysfd, shard)
	}
	if fd.pd == nil {
		fd.isBlocking.Store(true)
	}
	// A descriptor dropped without Close is closed by the collector, with
	// the finalizer os and net use: its record holds no argument, where
	// runtime.AddCleanup boxes one and a closure (24 bytes more per
	// connection, and a 16-byte handle to stop it). fd starts its
	// allocation, as SetFinalizer requires: standalone, or the first field
	// of a netFD (TestNetFDSize checks).
	runtime.SetFinalizer(fd, (*descriptor).finalize)
	return err
}

// finalize closes a descriptor the program dropped without Close. Nothing
// can hold a reference to it (a holder would keep it reachable), so no
// system call on it is in flight.
func (fd *descriptor) finalize() {
	if fd.pd != nil {
		fd.pd.Unblock()
		fd.pd.Close()
	}
	unix.Close(fd.sysfd)
}

// destroy runs when the last reference goes: unregister, then close.
func (fd *descriptor) destroy() error {
	runtime.SetFinalizer(fd, nil)
	if fd.pd != nil {
		fd.pd.Close()
	}
	// close(2) is never retried: after EINTR the descriptor is gone anyway.
	err := unix.Close(fd.sysfd)
	fd.sysfd = -1
	fd.mu.markDestroyed()
	return err
}

// Close closes the descriptor: every blocked operation returns the closed
// error, and Close returns once the number is really closed.
func (fd *descriptor) Close() error {
	if !fd.mu.increfAndClose() {
		return errClosing(fd.isFile)
	}
	if fd.pd != nil {
		fd.pd.Unblock()
	}
	err := fd.decref()
	if !fd.isBlocking.Load() {
		fd.mu.waitDestroyed()
	}
	return err
}

func (fd *descriptor) incref() error {
	if !fd.mu.incref() {
		return errClosing(fd.isFile)
	}
	return nil
}

// decref drops a reference; the last one destroys the descriptor and
// returns close(2)'s error.
func (fd *descriptor) decref() error {
	if fd.mu.decref() {
		return fd.destroy()
	}
	return nil
}

func (fd *descriptor) readLock() error {
	if !fd.mu.rwlock(true) {
		return errClosing(fd.isFile)
	}
	return nil
}

func (fd *descriptor) readUnlock() {
	if fd.mu.rwunlock(true) {
		fd.destroy()
	}
}

func (fd *descriptor) writeLock() error {
	if !fd.mu.rwlock(false) {
		return errClosing(fd.isFile)
	}
	return nil
}

func (fd *descriptor) writeUnlock() {
	if fd.mu.rwunlock(false) {
		fd.destroy()
	}
}

// sysfdOrInvalid returns the descriptor number, or -1 once closed.
func (fd *descriptor) sysfdOrInvalid() int {
	if fd.incref() != nil {
		return -1
	}
	defer fd.decref()
	return fd.sysfd
}

// pollable reports whether the descriptor is registered with a poller.
func (fd *descriptor) pollable() bool { return fd.pd != nil }

func (fd *descriptor) prepare(mode pollfd.Mode) error {
	if fd.pd == nil {
		return nil // as internal/poll: no checks for a non-pollable fd
	}
	return convertPollErr(fd.pd.Prepare(mode), fd.isFile)
}

func (fd *descriptor) wait(mode pollfd.Mode) error {
	if fd.pd == nil {
		return errWaitUnsupported
	}
	return convertPollErr(fd.pd.Wait(mode), fd.isFile)
}

// waitContext is wait that also ends when ctx is done; nil ctx is wait.
// It calls the Desc itself rather than through wait: one frame less under
// a park that may last as long as the connection idles.
func (fd *descriptor) waitContext(ctx context.Context, mode pollfd.Mode) error {
	if fd.pd == nil {
		return errWaitUnsupported
	}
	var err error
	if ctx == nil {
		err = fd.pd.Wait(mode)
	} else {
		err = fd.pd.WaitContext(ctx, mode)
	}
	return convertPollErr(err, fd.isFile)
}

// eofError turns a 0-byte read into io.EOF where that means end of file.
func (fd *descriptor) eofError(n int, err error) error {
	if n == 0 && err == nil && fd.zeroReadIsEOF {
		return io.EOF
	}
	return err
}

// Read wraps read(2). It mirrors internal/poll's FD.Read: a zero-length
// read returns (0, nil) without a syscall or deadline check; one read(2)
// per call, so short reads are normal; io.EOF bare.
func (fd *descriptor) Read(p []byte) (int, error) { return fd.ReadContext(nil, p) }

// ReadContext is Read whose wait for data also ends when ctx is done (nil
// ctx: never), with ctx's error; the descriptor stays usable.
func (fd *descriptor) ReadContext(ctx context.Context, p []byte) (int, error) {
	if err := fd.readLock(); err != nil {
		return 0, err
	}
	// No defer: every return unlocks. This frame is under the park of
	// every blocked Read, on a stack that holds it while the connection
	// idles; a defer record would make it bigger.
	if len(p) == 0 {
		fd.readUnlock()
		return 0, nil
	}
	if err := fd.prepare(pollfd.ModeRead); err != nil {
		fd.readUnlock()
		return 0, err
	}
	if fd.isStream && len(p) > maxRW {
		p = p[:maxRW]
	}
	for {
		n, err := ignoringEINTRIO(unix.Read, fd.sysfd, p)
		if err != nil {
			n = 0
			if err == unix.EAGAIN && fd.pollable() {
				if err = fd.waitContext(ctx, pollfd.ModeRead); err == nil {
					continue
				}
			}
		}
		fd.readUnlock()
		return n, fd.eofError(n, err)
	}
}

// Write wraps write(2), looping until all of p is written, as
// internal/poll's FD.Write does. A zero-length Write still checks the
// deadline and calls write(2). On error the count written so far is kept.
func (fd *descriptor) Write(p []byte) (int, error) { return fd.WriteContext(nil, p) }

// WriteContext is Write whose waits for space also end when ctx is done
// (nil ctx: never), returning the count written so far with ctx's error.
func (fd *descriptor) WriteContext(ctx context.Context, p []byte) (int, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	var nn int
	for {
		max := len(p)
		if fd.isStream && max-nn > maxRW {
			max = nn + maxRW
		}
		n, err := ignoringEINTRIO(unix.Write, fd.sysfd, p[nn:max])
		if n > max-nn {
			// The kernel claims more than asked: memory may be corrupt.
			panic("invalid return from write: got " + strconv.Itoa(n) + " from a write of " + strconv.Itoa(max-nn))
		}
		if n > 0 {
			nn += n
		}
		if nn == len(p) {
			return nn, err
		}
		if err == unix.EAGAIN && fd.pollable() {
			if err = fd.waitContext(ctx, pollfd.ModeWrite); err == nil {
				continue
			}
		}
		if err != nil {
			return nn, err
		}
		if n == 0 {
			return nn, io.ErrUnexpectedEOF
		}
	}
}

// Pread wraps pread(2). Like internal/poll it takes only a reference: it
// is neither polled nor serialised with Read.
func (fd *descriptor) Pread(p []byte, off int64) (int, error) {
	if err := fd.incref(); err != nil {
		return 0, err
	}
	defer fd.decref()
	if fd.isStream && len(p) > maxRW {
		p = p[:maxRW]
	}
	var n int
	var err error
	for {
		n, err = unix.Pread(fd.sysfd, p, off)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		n = 0
	}
	return n, fd.eofError(n, err)
}

// Pwrite wraps pwrite(2), looping until all of p is written at off.
func (fd *descriptor) Pwrite(p []byte, off int64) (int, error) {
	if err := fd.incref(); err != nil {
		return 0, err
	}
	defer fd.decref()
	var nn int
	for {
		max := len(p)
		if fd.isStream && max-nn > maxRW {
			max = nn + maxRW
		}
		n, err := unix.Pwrite(fd.sysfd, p[nn:max], off+int64(nn))
		if err == unix.EINTR {
			continue
		}
		if n > 0 {
			nn += n
		}
		if nn == len(p) {
			return nn, err
		}
		if err != nil {
			return nn, err
		}
		if n == 0 {
			return nn, io.ErrUnexpectedEOF
		}
	}
}

// Accept wraps accept4(2) with SOCK_NONBLOCK|SOCK_CLOEXEC. Under the read
// lock it accepts until EAGAIN before it waits (one edge may announce many
// connections); ECONNABORTED is retried silently, as internal/poll does.
// The returned string names the failed syscall for wrapping.
func (fd *descriptor) Accept() (int, unix.Sockaddr, string, error) { return fd.AcceptContext(nil) }

// AcceptContext is Accept whose wait also ends when ctx is done (nil ctx:
// never), with ctx's error.
func (fd *descriptor) AcceptContext(ctx context.Context) (int, unix.Sockaddr, string, error) {
	if err := fd.readLock(); err != nil {
		return -1, nil, "", err
	}
	defer fd.readUnlock()
	if err := fd.prepare(pollfd.ModeRead); err != nil {
		return -1, nil, "", err
	}
	for {
		s, rsa, err := accept4(fd.sysfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err == nil {
			return s, rsa, "", nil
		}
		switch err {
		case unix.EINTR, unix.ECONNABORTED:
			continue
		case unix.EAGAIN:
			if fd.pollable() {
				if err = fd.waitContext(ctx, pollfd.ModeRead); err == nil {
					continue
				}
				return -1, nil, "", err
			}
		}
		return -1, nil, "accept4", err
	}
}

// SetDeadline sets the deadline for mode, as internal/poll's
// setDeadlineImpl: a closed descriptor reports the closed error; one epoll
// refused reports os.ErrNoDeadline.
func (fd *descriptor) SetDeadline(t time.Time, mode pollfd.Mode) error {
	if err := fd.incref(); err != nil {
		return err
	}
	defer fd.decref()
	if fd.pd == nil {
		return os.ErrNoDeadline
	}
	return convertPollErr(fd.pd.SetDeadline(t, mode), fd.isFile)
}

// SetBlocking clears O_NONBLOCK for good, as internal/poll's SetBlocking:
// the descriptor stays registered, but a blocked syscall can no longer be
// interrupted by a deadline or Close.
func (fd *descriptor) SetBlocking() error {
	if err := fd.incref(); err != nil {
		return err
	}
	defer fd.decref()
	fd.isBlocking.Store(true)
	return unix.SetNonblock(fd.sysfd, false)
}

// Dup duplicates the descriptor with F_DUPFD_CLOEXEC; the string names the
// failed call.
func (fd *descriptor) Dup() (int, string, error) {
	if err := fd.incref(); err != nil {
		return -1, "", err
	}
	defer fd.decref()
	nfd, err := unix.FcntlInt(uintptr(fd.sysfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, "fcntl", err
	}
	return nfd, "", nil
}

// Fstat wraps fstat(2) with EINTR retried. It fills a syscall.Stat_t, the
// type os.FileInfo.Sys returns, so callers' type assertions carry over.
func (fd *descriptor) Fstat(st *syscall.Stat_t) error {
	return fd.control(func(sysfd int) error { return syscall.Fstat(sysfd, st) })
}

// ignoringEINTRIO retries an I/O syscall interrupted by a signal. Go's
// handlers use SA_RESTART, but EINTR still occurs (internal/poll cites
// golang.org/issue/22838 and others).
func ignoringEINTRIO(fn func(int, []byte) (int, error), fd int, p []byte) (int, error) {
	for {
		n, err := fn(fd, p)
		if err != unix.EINTR {
			return n, err
		}
	}
}
