//go:build linux

package gatenet

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// defaultPipeSize is the kernel buffer gatenet asks for a pipe's
// (PipeConfig.Size zero): a reader and a writer on the poller pay a hop
// (park, epoll, wake-up) per buffer-full, so a bigger buffer makes
// streaming cheaper, while every pipe's buffer counts against its user's
// /proc/sys/fs/pipe-user-pages-soft (16384 pages, 64 MiB by default),
// past which the kernel gives an unprivileged user's new pipes one or two
// pages and refuses to grow them. The value is chosen by measurement
// (docs/PERFORMANCE.md, "Pipe buffer size").
const defaultPipeSize = 256 << 10

// PipeConfig configures a pipe. The zero value is gatenet's default, which
// Pipe uses.
type PipeConfig struct {
	// Size is the kernel buffer in bytes, asked for with
	// fcntl(F_SETPIPE_SZ); the kernel rounds it up to a power-of-two
	// number of pages. Zero is gatenet's default, 256 KiB; negative leaves
	// the kernel's default (64 KiB, or less for a user past
	// /proc/sys/fs/pipe-user-pages-soft). The request is best effort: when
	// the kernel refuses it — a size over /proc/sys/fs/pipe-max-size, or a
	// user past pipe-user-pages-soft, both of which do not apply to a
	// process with CAP_SYS_RESOURCE (root) — the pipe keeps the buffer it
	// has and Pipe returns no error for it. Off Linux Size is ignored.
	Size int
}

// Pipe returns a connected pair of Files: reads from r return bytes written
// to w. It wraps pipe2(2) with O_CLOEXEC|O_NONBLOCK and mirrors os.Pipe,
// names ("|0", "|1") included, with a kernel buffer of PipeConfig.Size.
// Both ends are registered with the default poller, so reads and writes
// honour deadlines and Close unblocks them.
func (c PipeConfig) Pipe() (r, w *File, err error) { return c.pipeOn(pollfd.Default()) }

// Pipe returns a connected pair of Files: reads from r return bytes written
// to w. It wraps pipe2(2) with O_CLOEXEC|O_NONBLOCK and mirrors os.Pipe,
// names ("|0", "|1") included. Both ends are registered with the default
// poller, so reads and writes honour deadlines and Close unblocks them.
// Its kernel buffer is gatenet's default, 256 KiB (PipeConfig.Size), where
// os.Pipe's is the kernel's, 64 KiB.
func Pipe() (r, w *File, err error) { return PipeConfig{}.Pipe() }

// pipeOn is Pipe on poller.
func pipeOn(poller *pollfd.Poller) (r, w *File, err error) { return PipeConfig{}.pipeOn(poller) }

// pipeOn is c.Pipe on poller.
func (c PipeConfig) pipeOn(poller *pollfd.Poller) (r, w *File, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	switch {
	case c.Size == 0:
		setPipeSize(p[1], defaultPipeSize)
	case c.Size > 0:
		setPipeSize(p[1], c.Size)
	}
	r, rerr := newFile(poller, p[0], "|0", fileMadeNonblocking, true)
	w, werr := newFile(poller, p[1], "|1", fileMadeNonblocking, true)
	if rerr != nil || werr != nil {
		r.Close()
		w.Close()
		if rerr != nil {
			return nil, nil, rerr
		}
		return nil, nil, werr
	}
	poll.PairInBubble(r.fd, w.fd)
	return r, w, nil
}

// setPipeSize asks the kernel for a buffer of size bytes for the pipe fd
// (either end: both share it) with fcntl(F_SETPIPE_SZ), best effort: when
// the kernel refuses (EPERM past pipe-max-size or the user's
// pipe-user-pages-soft, EBUSY when the data in the pipe would not fit,
// EINVAL, ENOMEM) the pipe keeps the buffer it has. size ≤ 0 does nothing,
// and so does a size over 2 GiB, which the kernel refuses too (it would
// see a larger one truncated to 32 bits).
func setPipeSize(fd, size int) {
	if size <= 0 || size > 1<<31 {
		return
	}
	_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, size)
}
