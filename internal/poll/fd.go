//go:build linux

package poll

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

// FD is the descriptor every conn, listener and file is built on:
// internal/poll's FD with gatenet's poller underneath. It owns Sysfd.
//
// Lifetime: every operation holds a reference (fdMutex, fd_mutex.go) for
// as long as it uses Sysfd; Read-side operations also hold the read lock
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
// With faults attached (flagFaults) the syscall step is the fault layer's
// instead (fd_faults.go), and in a synctest bubble (flagBubble) the step
// wakes the peer after its call (fd_bubble.go); the rest of the loop is
// the same.
type FD struct {
	mu fdMutex

	// Sysfd is the descriptor number, -1 once closed. Read it only under
	// a reference (Incref, or any method of FD), as internal/poll's.
	Sysfd int

	pd *pollfd.Desc // nil when epoll refused the descriptor: blocking I/O

	isFile        bool // errors are the file kind (os.ErrClosed, not net.ErrClosed)
	isStream      bool // reads and writes are capped at maxRW per syscall
	zeroReadIsEOF bool // a 0-byte read means EOF (everything but datagrams)

	// flags: flagBlocking, O_NONBLOCK cleared (Close neither waits nor
	// interrupts); flagFaults, a fault layer is attached (fd_faults.go);
	// flagBubble, paired with its peer in a synctest bubble (fd_bubble.go);
	// flagBubbleLocks, a listener or datagram socket of a bubble, whose
	// lock waits are durable while pollfd parks its waits durably;
	// flagWatched, flagDrained, flagFilled, flagWriteWanted and
	// flagWriteWaited, a ReadyList's (fd_wait.go);
	// flagPrivate, a socket whose reads and writes may keep the P
	// (fd_sys.go).
	flags atomic.Uint32
}

const (
	flagBlocking = 1 << iota
	flagFaults
	flagBubble
	flagWatched // a ReadyList watches it (fd_wait.go)
	flagDrained // its last read, since the read side's last Prepare, left nothing to read (fd_wait.go)
	flagPrivate // a socket gatenet made, never handed out: raw system calls (fd_sys.go)
	flagFilled  // a read since the last Watch filled its buffer (fd_wait.go)
	// flagRestoreBlocking: the descriptor came blocking from its owner and
	// was made non-blocking here; the last close puts it back, for the
	// other holders of its open file description (RestoreBlockingOnClose).
	flagRestoreBlocking
	flagWriteWanted // a write with its context done found the write lock held (fd_wait.go)
	flagWriteWaited // the write lock's holder parked for room on a watched descriptor (fd_wait.go)
	flagAccessKnown // a File's access mode was read: flagReadOnly, flagWriteOnly (fd_wait.go)
	flagReadOnly
	flagWriteOnly
	flagBubbleLocks // a bubble's listener or datagram socket (fd_bubble.go)
	flagShared      // a File NewFile adopted: its description may be another's (fd_nonblock.go)
)

// AnyShard lets the poller choose the shard (round-robin).
const AnyShard = -1

// maxRW caps one read or write on a stream, as internal/poll does, so that
// a huge buffer is not handed to the kernel in one call.
const maxRW = 1 << 30

// NewFile wraps sysfd as a file (os's errors: "use of closed file"; a
// stream whose 0-byte read is EOF) and registers it with p on any shard,
// as os's newFile does. A registration epoll refuses (EPERM: a regular
// file or directory) leaves it in blocking mode; the registration error
// is returned alongside the usable descriptor, as internal/poll's Init
// does, and a file treats it as harmless.
func NewFile(sysfd int, p *pollfd.Poller) (*FD, error) {
	fd := newFileFD()
	return fd, fd.init(sysfd, p, AnyShard, polled)
}

// NewBlockingFile wraps sysfd as a file in blocking mode, not registered:
// for a descriptor that is not open, or that refused O_NONBLOCK.
func NewBlockingFile(sysfd int) *FD {
	fd := newFileFD()
	fd.init(sysfd, nil, AnyShard, notPolled)
	return fd
}

func newFileFD() *FD { return &FD{isFile: true, isStream: true, zeroReadIsEOF: true} }

// InitSocket makes a zero FD, in place, the socket sysfd of type sotype
// (net's errors; capped reads and writes on a stream; a 0-byte read is EOF
// but on a datagram or raw socket, as net's newFD decides), registered
// with p on shard (pollfd.Poller.OpenShard; AnyShard spreads), lazily: a
// socket joins the epoll set at its first wait (pollfd.Poller.OpenLazy),
// so one served and closed without blocking makes no epoll_ctl. In place
// because a socket's FD lives in its netFD, one allocation for both (an
// idle server holds one per connection); the FD must be the netFD's first
// field (see init). The registration error is returned; a socket treats
// it as fatal.
func (fd *FD) InitSocket(sysfd, sotype int, p *pollfd.Poller, shard int) error {
	fd.isStream = sotype == unix.SOCK_STREAM
	fd.zeroReadIsEOF = sotype != unix.SOCK_DGRAM && sotype != unix.SOCK_RAW
	return fd.init(sysfd, p, shard, polledLazily)
}

// registration is how init registers a descriptor with its poller.
type registration uint8

const (
	notPolled    registration = iota // blocking I/O
	polled                           // at once: epoll may refuse it (pollfd.Poller.Open)
	polledLazily                     // at its first wait (pollfd.Poller.OpenLazy): a socket, which epoll always accepts
)

// init registers sysfd with p, on shard, as reg says; the kind fields
// (isFile, isStream, zeroReadIsEOF) are already set.
func (fd *FD) init(sysfd int, p *pollfd.Poller, shard int, reg registration) error {
	fd.Sysfd = sysfd
	var err error
	switch {
	case reg == notPolled:
	case reg == polledLazily:
		fd.pd, err = p.OpenLazy(sysfd, shard)
	case shard == AnyShard:
		fd.pd, err = p.Open(sysfd)
	default:
		fd.pd, err = p.OpenShard(sysfd, shard)
	}
	if fd.pd == nil {
		fd.flags.Or(flagBlocking)
	}
	// An FD dropped without Close is closed by the collector, with the
	// finalizer os and net use: its record holds no argument, where
	// runtime.AddCleanup boxes one and a closure, and needs a handle kept
	// to stop it: memory every connection would pay. fd starts its
	// allocation, as SetFinalizer requires: standalone, or the first field
	// of a netFD (the root package's TestNetFDSize checks).
	runtime.SetFinalizer(fd, (*FD).finalize)
	return err
}

// finalize closes a descriptor the program dropped without Close. Nothing
// can hold a reference to it (a holder would keep it reachable), so no
// system call on it is in flight. Its end of stream wakes a peer parked
// durably in a bubble, as destroy's does; the wake comes from outside the
// bubble (the finalizer's goroutine), so the peer waits on as an ordinary
// waiter, for the edge the close made.
func (fd *FD) finalize() {
	fd.dropFaults()
	if fd.pd != nil {
		fd.pd.Unblock()
		fd.pd.Close()
	}
	unix.Close(fd.Sysfd)
	fd.wakePeer(pollfd.ModeReadWrite)
}

// destroy runs when the last reference goes: unregister, then close.
func (fd *FD) destroy() error {
	runtime.SetFinalizer(fd, nil)
	fd.dropFaults()
	if fd.pd != nil {
		fd.pd.Close()
	}
	if fd.restoreBlocking() {
		unix.SetNonblock(fd.Sysfd, false) // best effort, as os's Fd
	}
	// close(2) is never retried: after EINTR the descriptor is gone anyway.
	err := unix.Close(fd.Sysfd)
	fd.Sysfd = -1
	fd.wakePeer(pollfd.ModeReadWrite) // its end of stream
	fd.mu.markDestroyed()
	return err
}

// Close closes the descriptor: every blocked operation returns the closed
// error, and Close returns once the number is really closed.
func (fd *FD) Close() error {
	if !fd.mu.increfAndClose() {
		return errClosing(fd.isFile)
	}
	if fd.pd != nil {
		fd.pd.Unblock()
	}
	err := fd.Decref()
	if fd.flags.Load()&flagBlocking == 0 {
		fd.mu.waitDestroyed()
	}
	return err
}

// Incref takes a reference, so that Sysfd stays open until Decref; it
// fails with the closed error once Close has begun.
func (fd *FD) Incref() error {
	if !fd.mu.incref() {
		return errClosing(fd.isFile)
	}
	return nil
}

// Decref drops a reference; the last one destroys the descriptor and
// returns close(2)'s error.
func (fd *FD) Decref() error {
	if fd.mu.decref() {
		return fd.destroy()
	}
	return nil
}

func (fd *FD) readLock() error { return fd.lockContext(context.Background(), true) }

func (fd *FD) readUnlock() {
	if fd.mu.rwunlock(true) {
		fd.destroy()
	}
}

func (fd *FD) writeLock() error { return fd.lockContext(context.Background(), false) }

func (fd *FD) writeUnlock() {
	if fd.mu.rwunlock(false) {
		fd.destroy()
		return
	}
	// Read after the unlock, as wantWrite reads the lock after its want.
	if f := fd.flags.Load(); f&(flagWriteWanted|flagWriteWaited) != 0 {
		f = fd.flags.And(^uint32(flagWriteWanted | flagWriteWaited))
		// If a Close came meanwhile and the registration went to another
		// descriptor, this report is a spurious one, which its list's
		// flush survives (pollfd's contract 5).
		fd.pd.NotifyWritable(f&flagWriteWanted != 0)
	}
}

// readLockContext is readLock whose wait for another reader to finish
// also ends when ctx is done, with ctx's error: a context bounds the
// whole call, as a deadline does.
func (fd *FD) readLockContext(ctx context.Context) error {
	return fd.lockContext(ctx, true)
}

// writeLockContext is writeLock's readLockContext.
func (fd *FD) writeLockContext(ctx context.Context) error {
	return fd.lockContext(ctx, false)
}

// lockContext takes the read or write lock; a wait for it is durable in
// a synctest bubble only on a descriptor whose own waits are (lockDurably).
func (fd *FD) lockContext(ctx context.Context, read bool) error {
	ok, err := fd.mu.rwlockContext(ctx, read, fd.lockDurably())
	for err != nil && !read && fd.wantWrite() {
		ok, err = fd.mu.rwlockContext(ctx, read, fd.lockDurably())
	}
	if err != nil {
		return err
	}
	if !ok {
		return errClosing(fd.isFile)
	}
	return nil
}

// unlock releases mode's lock, taken by lockContext: the read lock for
// ModeRead, else the write lock.
func (fd *FD) unlock(mode pollfd.Mode) {
	if mode == pollfd.ModeRead {
		fd.readUnlock()
	} else {
		fd.writeUnlock()
	}
}

// Pollable reports whether the descriptor is registered with a poller.
func (fd *FD) Pollable() bool { return fd.pd != nil }

// Desc returns the descriptor's registration, nil when epoll refused it.
func (fd *FD) Desc() *pollfd.Desc { return fd.pd }

// Prepare readies mode for an I/O attempt (pollfd.Desc.Prepare): it fails
// fast, with the error an I/O call would return, on a closed descriptor or
// an expired deadline.
func (fd *FD) Prepare(mode pollfd.Mode) error {
	if fd.pd == nil {
		return nil // as internal/poll: no checks for a non-pollable fd
	}
	if mode == pollfd.ModeRead && fd.flags.Load()&flagDrained != 0 {
		fd.flags.And(^uint32(flagDrained)) // this read's outcome decides it anew
	}
	return convertPollErr(fd.pd.Prepare(mode), fd.isFile)
}

// Wait parks until mode is ready, its deadline passes or the descriptor
// is closed (pollfd.Desc.Wait), with errors mapped as I/O calls map them.
// Every write-side loop waits through it or waitContext, so that a
// ReadyList waiting for room hears of the edges it takes (writeUnlock).
func (fd *FD) Wait(mode pollfd.Mode) error {
	return fd.waitContext(context.Background(), mode)
}

// waitContext is Wait that also ends when ctx is done. It calls the Desc
// itself rather than through Wait, and a ctx that can never end (Done
// nil, as context.Background's) takes Desc.Wait: one frame less each
// under a park that may last as long as the connection idles.
func (fd *FD) waitContext(ctx context.Context, mode pollfd.Mode) error {
	if fd.pd == nil {
		return errWaitUnsupported
	}
	if mode == pollfd.ModeWrite && fd.flags.Load()&flagWatched != 0 && ctx.Err() == nil {
		fd.flags.Or(flagWriteWaited) // the edges it takes, a ReadyList may wait for (writeUnlock)
	}
	var err error
	if ctx.Done() == nil {
		err = fd.pd.Wait(mode)
	} else {
		err = fd.pd.WaitContext(ctx, mode)
	}
	return convertPollErr(err, fd.isFile)
}

// eofError turns a 0-byte read into io.EOF where that means end of file.
func (fd *FD) eofError(n int, err error) error {
	if n == 0 && err == nil && fd.zeroReadIsEOF {
		return io.EOF
	}
	return err
}

// Read wraps read(2). It mirrors internal/poll's FD.Read: a zero-length
// read returns (0, nil) without a syscall or deadline check; one read(2)
// per call, so short reads are normal; io.EOF bare.
func (fd *FD) Read(p []byte) (int, error) { return fd.ReadContext(context.Background(), p) }

// ReadContext is Read whose wait for data also ends when ctx is done,
// with ctx's error; the descriptor stays usable.
func (fd *FD) ReadContext(ctx context.Context, p []byte) (int, error) {
	if err := fd.readLockContext(ctx); err != nil {
		return 0, err
	}
	// No defer: every return unlocks. This frame is under the park of
	// every blocked Read, on a stack that holds it while the connection
	// idles; a defer record would make it bigger. For the same reason the
	// loop is written out here rather than run by ioLoop (fd_msg.go), which
	// would add two frames (pollfd/gate.go, "Stack depth"), and the fault
	// layer's step is a call out of line, not a closure in this frame.
	if len(p) == 0 {
		fd.readUnlock()
		return 0, nil
	}
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		fd.readUnlock()
		return 0, err
	}
	if fd.isStream && len(p) > maxRW {
		p = p[:maxRW]
	}
	for calls := 0; ; calls++ {
		var n int
		var err error
		if fd.hooked() {
			n, err = fd.readHooked(p, calls)
		} else {
			n, err = fd.read(p)
		}
		if err != nil {
			n = 0
			if err == unix.EAGAIN && fd.Pollable() {
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
func (fd *FD) Write(p []byte) (int, error) { return fd.WriteContext(context.Background(), p) }

// WriteContext is Write whose waits for space also end when ctx is done,
// returning the count written so far with ctx's error.
// Like ReadContext's, its loop is written out, not ioLoop's: a writer
// parked on a peer that stopped reading is parked here.
func (fd *FD) WriteContext(ctx context.Context, p []byte) (int, error) {
	if err := fd.writeLockContext(ctx); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	var nn int
	for calls := 0; ; calls++ {
		max := len(p)
		if fd.isStream && max-nn > maxRW {
			max = nn + maxRW
		}
		b := p[nn:max]
		var n int
		var err error
		if fd.hooked() {
			n, err = fd.writeHooked(b, calls)
		} else {
			n, err = fd.write(b)
		}
		if n > len(b) {
			badWrite(n, len(b))
		}
		if n > 0 {
			nn += n
		}
		if nn == len(p) {
			return nn, err
		}
		if err == unix.EAGAIN && fd.Pollable() {
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

// badWrite panics: the kernel claims to have written n bytes of a write
// of asked, so memory may be corrupt. Out of line, so that WriteContext's
// frame, under every parked writer, holds no string building.
//
//go:noinline
func badWrite(n, asked int) {
	panic("invalid return from write: got " + strconv.Itoa(n) + " from a write of " + strconv.Itoa(asked))
}

// Pread wraps pread(2). Like internal/poll it takes only a reference: it
// is neither polled nor serialised with Read.
func (fd *FD) Pread(p []byte, off int64) (int, error) {
	if err := fd.Incref(); err != nil {
		return 0, err
	}
	defer fd.Decref()
	if fd.isStream && len(p) > maxRW {
		p = p[:maxRW]
	}
	n, err := ignoringEINTRAt(unix.Pread, fd.Sysfd, p, off)
	if err != nil {
		n = 0
	}
	return n, fd.eofError(n, err)
}

// Pwrite wraps pwrite(2), looping until all of p is written at off.
func (fd *FD) Pwrite(p []byte, off int64) (int, error) {
	if err := fd.Incref(); err != nil {
		return 0, err
	}
	defer fd.Decref()
	var nn int
	for {
		max := len(p)
		if fd.isStream && max-nn > maxRW {
			max = nn + maxRW
		}
		n, err := ignoringEINTRAt(unix.Pwrite, fd.Sysfd, p[nn:max], off+int64(nn))
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

// SetDeadline sets the deadline for mode, as internal/poll's
// setDeadlineImpl: a closed descriptor reports the closed error; one epoll
// refused reports os.ErrNoDeadline.
func (fd *FD) SetDeadline(t time.Time, mode pollfd.Mode) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	if fd.pd == nil {
		return os.ErrNoDeadline
	}
	return convertPollErr(fd.pd.SetDeadline(t, mode), fd.isFile)
}

// SetBlocking clears O_NONBLOCK for good, as internal/poll's SetBlocking:
// the descriptor stays registered, but a blocked syscall can no longer be
// interrupted by a deadline or Close.
func (fd *FD) SetBlocking() error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	fd.flags.Or(flagBlocking)
	fd.flags.And(^uint32(flagPrivate))
	return unix.SetNonblock(fd.Sysfd, false)
}

// RestoreBlockingOnClose makes the last close clear O_NONBLOCK again
// before close(2): for a descriptor that was blocking when it was handed
// over (NewFile), whose open file description other processes or
// descriptors (a shell's terminal, a dup) may share and expect blocking.
func (fd *FD) RestoreBlockingOnClose() { fd.flags.Or(flagRestoreBlocking) }

// Dup duplicates the descriptor with F_DUPFD_CLOEXEC; the string names the
// failed call.
func (fd *FD) Dup() (int, string, error) {
	if err := fd.Incref(); err != nil {
		return -1, "", err
	}
	defer fd.Decref()
	fd.HandedOut()
	nfd, err := unix.FcntlInt(uintptr(fd.Sysfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1, "fcntl", err
	}
	return nfd, "", nil
}

// Fstat wraps fstat(2) with EINTR retried. It fills a syscall.Stat_t, the
// type os.FileInfo.Sys returns, so callers' type assertions carry over.
func (fd *FD) Fstat(st *syscall.Stat_t) error {
	return fd.Control(func(sysfd int) error { return syscall.Fstat(sysfd, st) })
}

// Control runs call on the descriptor number while holding a reference
// (so the number cannot be closed and reused under it), retrying EINTR,
// as internal/poll's Fchmod, Fchown, Ftruncate, Fsync and Seek do.
func (fd *FD) Control(call func(sysfd int) error) error {
	if err := fd.Incref(); err != nil {
		return err
	}
	defer fd.Decref()
	return ignoringEINTR(func() error { return call(fd.Sysfd) })
}

// ignoringEINTR retries fn while a signal interrupts it. Go's handlers
// use SA_RESTART, but EINTR still occurs (internal/poll cites
// golang.org/issue/22838 and others). ignoringEINTRAt is the same for
// pread(2) and pwrite(2), without a closure; read(2), write(2) and the
// socket calls retry it in fd_sys.go.
func ignoringEINTR(fn func() error) error {
	for {
		if err := fn(); err != unix.EINTR {
			return err
		}
	}
}

// ignoringEINTRAt is ignoringEINTR for pread(2) and pwrite(2).
func ignoringEINTRAt(fn func(int, []byte, int64) (int, error), fd int, p []byte, off int64) (int, error) {
	for {
		n, err := fn(fd, p, off)
		if err != unix.EINTR {
			return n, err
		}
	}
}
