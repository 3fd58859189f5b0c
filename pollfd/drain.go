//go:build linux

package pollfd

// The drain loop: the goroutine that turns a shard's epoll events into
// deliveries (strategy.go says how each strategy waits; this file is its
// life cycle).
//
// Either loop runs only while the shard has descriptors registered, so
// that a program (or a test checking for leaked goroutines with goleak)
// that has closed every conn, listener and pipe is left with no gatenet
// goroutine, as net's poller leaves none. The epoll instance
// (and the nested loop's dup of it in the runtime's poller, or the
// dedicated loop's eventfd) stays, as the runtime's own epoll descriptor
// does.
//
// The protocol, between Open (registered 0 → 1), Close (1 → 0) and the
// loop, D. running says whether a D exists or is being started; mu
// serialises D's decision to exit with Open's decision to start one;
// armed says whether an idle check is scheduled.
//
//	Open   registered.Add(1); if !running: under mu, if !running
//	       { running = true; start D }.
//	Close  if registered.Add(-1) == 0 and armed.CompareAndSwap(false,
//	       true): schedule an idle check idleLinger from now. Nested: set
//	       the epoll file's read deadline (a runtime timer: no system
//	       call, no wake). Dedicated: write the loop's eventfd, which
//	       makes its next epoll_wait time out after idleLinger.
//	D      waits as always; when the check is due (the deadline wakes it,
//	       or the epoll_wait times out): clear the deadline, armed =
//	       false, then under mu: running = false; if registered != 0
//	       { running = true; wait again } else exit.
//
// Why no Open is left without a loop: running and registered are
// sequentially consistent atomics, written each before the other is read
// (Open writes registered then reads running; D writes running then reads
// registered), so at least one side sees the other's write. If D sees
// registered != 0, it stays. If Open sees running == false, it takes mu,
// which D holds across its check, and finds either running restored (D
// stayed) or still false (D has gone, and Open starts another).
//
// Why D cannot park forever with nothing registered: D clears the
// deadline (dedicated: has read the eventfd), then armed, before it reads
// registered. A Close whose decrement that read missed comes after it, so
// its CompareAndSwap comes after D cleared armed: either it arms, setting
// a deadline (writing the eventfd) after D's clear, or another Close armed
// first, after D's clear too. Either way a check is pending and D wakes
// again. A check D never sees (it exited
// first, and a new D inherits it) costs the new D one spurious check,
// nothing more.
//
// The check runs idleLinger after the first Close that found the shard
// empty, not the last: a program that opens and closes one descriptor at
// a time pays one timer and at most one loop start per idleLinger, and
// between them only an atomic add and a failed CompareAndSwap per Close.
// The linger is well inside the time goleak keeps retrying (about 400 ms)
// before it reports a leak.

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/bubble"
)

// idleLinger is how long a drain loop outlives the shard's last
// registered descriptor. A variable only so that tests can make every
// 1 → 0 transition end the loop (export_test.go).
var idleLinger atomic.Int64 // a time.Duration

func init() { idleLinger.Store(int64(5 * time.Millisecond)) }

// wakeToken marks the dedicated loop's eventfd, written by stop and to
// schedule an idle check; table tokens are never 0.
const wakeToken = 0

// drainLoop is the goroutine that turns epoll events into deliveries.
type drainLoop struct {
	buf     []unix.EpollEvent
	eventfd int             // Dedicated: ends an epoll_wait(-1) (wakeToken)
	epfile  *os.File        // Nested: the epoll fd as the runtime poller sees it
	epdup   int             // Nested: epfile's descriptor number (a dup of epfd)
	rc      syscall.RawConn // Nested: epfile's RawConn
	drainFn func(uintptr) bool

	// The idle protocol at the top of this file.
	running atomic.Bool
	armed   atomic.Bool
	mu      sync.Mutex
	stopped bool // under mu: stop has begun, start no D

	// alive is held by the running loop, taken for it before it starts
	// and released when it returns, so stop can wait for it by taking it.
	// Not a WaitGroup: a loop may be started inside a testing/synctest
	// bubble and stopped outside it, which a WaitGroup refuses (fatally).
	alive sync.Mutex
}

func (l *drainLoop) start(s *shard) error {
	l.buf = make([]unix.EpollEvent, eventBatch)
	switch s.poller.opts.Strategy {
	case Dedicated:
		efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return os.NewSyscallError("eventfd", err)
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN}
		setToken(&ev, wakeToken)
		if err := unix.EpollCtl(s.epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
			unix.Close(efd)
			return os.NewSyscallError("epoll_ctl", err)
		}
		l.eventfd = efd
	case Nested:
		// os.NewFile registers a descriptor with the runtime poller only if
		// it is already non-blocking. The epoll fd is dup'ed so that the
		// os.File owns its own number and Poller.Close closes s.epfd itself.
		dup, err := unix.FcntlInt(uintptr(s.epfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("fcntl", err)
		}
		if err := unix.SetNonblock(dup, true); err != nil {
			unix.Close(dup)
			return os.NewSyscallError("fcntl", err)
		}
		l.epdup = dup
		l.epfile = os.NewFile(uintptr(dup), "pollfd-epoll")
		rc, err := l.epfile.SyscallConn()
		if err != nil {
			l.epfile.Close()
			return err
		}
		l.rc = rc
		l.drainFn = func(uintptr) bool { return l.drainNow(s) }
	}
	// The loop itself starts with the first registered descriptor.
	return nil
}

// registered is called by open after it has counted a new descriptor:
// it starts the loop if none is running.
func (l *drainLoop) registered(s *shard) {
	if l.running.Load() {
		return
	}
	l.mu.Lock()
	if !l.running.Load() && !l.stopped {
		l.running.Store(true)
		l.alive.Lock() // a loop that has just decided to exit may still hold it
		s.stats.drainStarts.Add(1)
		s.stats.drainLoops.Add(1)
		run := l.runNested
		if s.poller.opts.Strategy == Dedicated {
			run = l.runDedicated
		}
		if bubble.In() {
			bubble.GoOutside(func() { run(s) })
		} else {
			go run(s)
		}
	}
	l.mu.Unlock()
}

// unregistered is called by Desc.Close when the shard's count of
// registered descriptors has fallen to zero: unless a check is already
// scheduled, the nested loop checks idleLinger from now, and exits if the
// shard is still empty then.
func (l *drainLoop) unregistered(s *shard) {
	if !l.armed.CompareAndSwap(false, true) {
		return
	}
	if s.poller.opts.Strategy == Dedicated {
		// Under mu, and not once stopped: stop closes the eventfd after
		// it set stopped, and its number may then be another file's.
		l.mu.Lock()
		if !l.stopped {
			l.wake()
		}
		l.mu.Unlock()
		return
	}
	// An error means stop has closed epfile, which ends the loop anyway.
	_ = l.epfile.SetReadDeadline(time.Now().Add(time.Duration(idleLinger.Load())))
}

// wake makes the dedicated loop's eventfd readable. A write can fail only
// if the counter would overflow (it is read back at every wake) or the
// eventfd is gone (stop closes it after the loop has ended).
func (l *drainLoop) wake() error {
	one := [8]byte{1}
	_, err := unix.Write(l.eventfd, one[:])
	return err
}

// runDedicated is the dedicated drain loop: epoll_wait(-1), EINTR retried
// (in Go it is common: the runtime preempts with SIGURG), until stop; and,
// once an idle check is scheduled, epoll_wait(idleLinger) until it is due.
// Its Stats.DrainTime is its dispatching, from each epoll_wait's return:
// the system call itself blocks, so it is not counted.
func (l *drainLoop) runDedicated(s *shard) {
	defer l.exited(s)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	timeout := -1
	for {
		n, err := unix.EpollWait(s.epfd, l.buf, timeout)
		if err == unix.EINTR {
			s.stats.eintr.Add(1)
			continue
		}
		if err != nil {
			panic(fmt.Sprintf("pollfd: epoll_wait failed: %v", err)) // the runtime throws too
		}
		if n == 0 && timeout >= 0 { // the idle check is due
			timeout = -1
			l.armed.Store(false)
			if l.exitIfIdle(s) {
				return
			}
			continue
		}
		start := nanotime()
		s.stats.recordWait(n)
		woken := s.dispatch(l.buf[:n], true)
		s.stats.drainNanos.Add(uint64(nanotime() - start))
		if s.closed.Load() {
			return
		}
		if woken {
			var cnt [8]byte
			unix.Read(l.eventfd, cnt[:]) // level-triggered: reset it
			timeout = int(time.Duration(idleLinger.Load()).Milliseconds())
		}
	}
}

// runNested waits for the epoll fd in the runtime poller and drains it
// with zero-timeout epoll_wait until it comes back short; it returns when
// stop closes epfile or when the shard has been idle (the protocol above).
func (l *drainLoop) runNested(s *shard) {
	defer l.exited(s)
	for {
		err := l.rc.Read(l.drainFn)
		if err == nil || s.closed.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
			return // closed: drainNow saw it, or Read failed on the closed epfile
		}
		_ = l.epfile.SetReadDeadline(time.Time{})
		l.armed.Store(false)
		if l.exitIfIdle(s) {
			return
		}
	}
}

// exited is the last thing a drain goroutine does.
func (l *drainLoop) exited(s *shard) {
	s.stats.drainLoops.Add(-1)
	l.alive.Unlock()
}

// exitIfIdle is D's half of the idle protocol: it reports whether the loop
// may exit, having marked it not running.
func (l *drainLoop) exitIfIdle(s *shard) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running.Store(false)
	if s.stats.registered.Load() != 0 {
		l.running.Store(true)
		return false
	}
	return true
}

// drainNow is the nested loop's RawConn.Read callback: epoll_wait(…, 0)
// until a short batch. It returns true (end the Read) only when the shard
// is closed, false to park until the epoll fd is readable again. Its time,
// from the runtime handing it the epoll fd to its return, is
// Stats.DrainTime: the loop never blocks in it, so that is its CPU time
// while its thread keeps a CPU (more, where threads outnumber CPUs), at
// the cost of reading the monotonic clock (vDSO) twice per wake.
func (l *drainLoop) drainNow(s *shard) bool {
	start := nanotime()
	defer func() { s.stats.drainNanos.Add(uint64(nanotime() - start)) }()
	for {
		n, errno := epollWaitNow(s.epfd, l.buf)
		if errno == unix.EINTR {
			s.stats.eintr.Add(1)
			continue
		}
		if errno != 0 {
			panic(fmt.Sprintf("pollfd: epoll_wait failed: %v", errno))
		}
		s.stats.recordWait(n)
		s.dispatch(l.buf[:n], true)
		if s.closed.Load() {
			return true
		}
		if n < len(l.buf) {
			return false
		}
	}
}

// stop ends the drain goroutine and waits for it.
func (l *drainLoop) stop(s *shard) error {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	var err error
	switch s.poller.opts.Strategy {
	case Dedicated:
		if werr := l.wake(); werr != nil {
			err = os.NewSyscallError("write", werr)
		}
		l.alive.Lock() // no loop starts once stopped is set
		l.alive.Unlock()
		unix.Close(l.eventfd)
	case Nested:
		err = l.epfile.Close()
		l.alive.Lock() // no loop starts once stopped is set
		l.alive.Unlock()
	}
	return err
}
