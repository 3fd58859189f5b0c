//go:build linux

package poll

import (
	"os"
	"sync"
	"weak"

	"golang.org/x/sys/unix"
)

// Open file descriptions gatenet's Files share. NewFile makes a blocking
// descriptor non-blocking, so that it can be polled, and puts it back at
// its last close (flagRestoreBlocking): the mode is the open file
// description's, which other holders share. One of those holders may be
// another File (NewFile of a dup), which found the description
// non-blocking and relies on that: its reads would block in the kernel,
// deaf to deadlines and to Close. So every File NewFile adopted is
// tracked (flagShared), and the one whose close would restore blocking
// mode hands that duty to another tracked File on the same description,
// if any is open. The last one to close restores it.
//
// shared.mu orders the hand-over with the other File's own close: a
// tracked FD leaves the set under it before close(2), so every number in
// the set is open while the lock is held. The set holds weak pointers: a
// File dropped without Close is still collected (its finalizer closes
// it), and its entry, nil by then, is swept at the next look.
var shared struct {
	mu      sync.Mutex
	fds     map[weak.Pointer[FD]]struct{}
	sweepAt int // TrackShared sweeps collected entries past this size
}

// TrackShared records fd, a File adopted from its owner (NewFile), as one
// that may share its open file description with another such File.
func (fd *FD) TrackShared() {
	shared.mu.Lock()
	if shared.fds == nil {
		shared.fds = make(map[weak.Pointer[FD]]struct{})
	}
	if len(shared.fds) >= shared.sweepAt {
		for wp := range shared.fds {
			if wp.Value() == nil {
				delete(shared.fds, wp) // collected: its finalizer closed it
			}
		}
		shared.sweepAt = 2*len(shared.fds) + 16
	}
	shared.fds[weak.Make(fd)] = struct{}{}
	fd.flags.Or(flagShared)
	shared.mu.Unlock()
}

// restoreBlocking reports whether fd's last close must clear O_NONBLOCK:
// it was asked to (flagRestoreBlocking), nothing made it blocking since,
// and no other tracked File on the same description is open, to which it
// otherwise hands the duty. Called by destroy, before close(2).
func (fd *FD) restoreBlocking() bool {
	f := fd.flags.Load()
	restore := f&flagRestoreBlocking != 0 && f&flagBlocking == 0
	if f&flagShared == 0 {
		return restore
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	delete(shared.fds, weak.Make(fd))
	if !restore {
		return false
	}
	for wp := range shared.fds {
		if other := wp.Value(); other != nil && other.flags.Load()&flagBlocking == 0 && sameDescription(fd.Sysfd, other.Sysfd) {
			other.flags.Or(flagRestoreBlocking)
			return false
		}
	}
	return true
}

// kcmpFile is kcmp(2)'s KCMP_FILE: do two descriptors refer to one open
// file description.
const kcmpFile = 0

// sameDescription reports whether descriptors a and b of this process
// refer to one open file description: kcmp(2); where the kernel refuses
// it (no CONFIG_KCMP, a seccomp filter), the same file opened with the
// same flags, which the two ends of one pipe, say, are not.
func sameDescription(a, b int) bool {
	pid := uintptr(os.Getpid())
	r, _, e := unix.Syscall6(unix.SYS_KCMP, pid, pid, kcmpFile, uintptr(a), uintptr(b), 0)
	if e == 0 {
		return r == 0
	}
	return sameFileAndFlags(a, b)
}

// sameFileAndFlags is sameDescription's guess without kcmp(2).
func sameFileAndFlags(a, b int) bool {
	var sa, sb unix.Stat_t
	if unix.Fstat(a, &sa) != nil || unix.Fstat(b, &sb) != nil || sa.Dev != sb.Dev || sa.Ino != sb.Ino {
		return false
	}
	fa, erra := unix.FcntlInt(uintptr(a), unix.F_GETFL, 0)
	fb, errb := unix.FcntlInt(uintptr(b), unix.F_GETFL, 0)
	return erra == nil && errb == nil && fa == fb
}
