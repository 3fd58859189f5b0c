//go:build linux

package poll

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// sendfileCalls counts sendfile(2) calls, so tests can prove the zero-copy
// path ran without timing anything.
var sendfileCalls atomic.Int64

// SendfileCalls reports how many sendfile(2) calls SendFile has made. It
// is a test hook (the root package's tests reach it through export_test.go),
// not an API.
func SendfileCalls() int64 { return sendfileCalls.Load() }

// SendFile copies up to size bytes (size 0: to end of file) from the file
// descriptor src, from and advancing its current offset, to the
// descriptor with sendfile(2), waiting for room as Write does. It mirrors
// internal/poll's SendFile: handled is false when the kernel refused
// before anything was sent (the caller then copies through a buffer).
func (fd *FD) SendFile(src int, size int64) (written int64, err error, handled bool) {
	if fd.copyRefused() {
		return 0, nil, false
	}
	if err := fd.writeLock(); err != nil {
		return 0, err, false
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err, false
	}
	for {
		chunk := 1<<31 - 1
		if size > 0 {
			chunk = int(min(size-written, int64(chunk)))
		}
		sendfileCalls.Add(1)
		n, err := unix.Sendfile(fd.Sysfd, src, nil, chunk)
		if n > 0 {
			written += int64(n)
			fd.wakePeer(pollfd.ModeWrite)
		}
		switch err {
		case nil:
			if n == 0 || (size > 0 && written >= size) {
				return written, nil, true // end of file, or the limit
			}
		case unix.EAGAIN:
			if err = fd.Wait(pollfd.ModeWrite); err != nil {
				return written, err, true
			}
		case unix.EINTR:
		case unix.ENOSYS, unix.EOPNOTSUPP, unix.EINVAL:
			return written, err, written > 0
		default:
			return written, err, true
		}
	}
}
