//go:build linux

package gatenet

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// Pipe returns a connected pair of Files: reads from r return bytes written
// to w. It wraps pipe2(2) with O_CLOEXEC|O_NONBLOCK and mirrors os.Pipe,
// names ("|0", "|1") included. Both ends are registered with the default
// poller, so reads and writes honour deadlines and Close unblocks them.
func Pipe() (r, w *File, err error) { return pipeOn(pollfd.Default()) }

// pipeOn is Pipe on poller.
func pipeOn(poller *pollfd.Poller) (r, w *File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	r, rerr := newFile(poller, p[0], "|0", fileMadeNonblocking)
	w, werr := newFile(poller, p[1], "|1", fileMadeNonblocking)
	if rerr != nil || werr != nil {
		r.Close()
		w.Close()
		if rerr != nil {
			return nil, nil, rerr
		}
		return nil, nil, werr
	}
	return r, w, nil
}
