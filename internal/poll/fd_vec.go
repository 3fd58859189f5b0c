//go:build linux

package poll

import (
	"io"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// maxIovecs is IOV_MAX on Linux: how many buffers one writev takes.
const maxIovecs = 1024

// iovecPool holds Writev's iovec arrays, each grown to what its callers
// needed (at most maxIovecs) and cleared of their buffers before it goes
// back.
var iovecPool = sync.Pool{New: func() any { return new([]unix.Iovec) }}

// Writev wraps writev(2), as internal/poll's FD.Writev: it writes every
// buffer in *v, in batches of at most 1024 non-empty buffers (a buffer over
// 1 GiB on a stream ends its batch at 1 GiB), looping on partial writes and
// EAGAIN. It consumes *v as it goes, so on error *v holds what was not
// written. The iovec array comes from a pool (internal/poll caches one
// per descriptor; gatenet keeps that pointer out of every connection):
// no allocation once the pool is warm.
func (fd *FD) Writev(v *[][]byte) (int64, error) {
	if err := fd.writeLock(); err != nil {
		return 0, err
	}
	defer fd.writeUnlock()
	if err := fd.Prepare(pollfd.ModeWrite); err != nil {
		return 0, err
	}
	iovp := iovecPool.Get().(*[]unix.Iovec)
	defer iovecPool.Put(iovp)
	var n int64
	var err error
	for calls := 0; len(*v) > 0; calls++ {
		iovecs := (*iovp)[:0]
		for _, chunk := range *v {
			if len(chunk) == 0 {
				continue
			}
			iov := unix.Iovec{Base: &chunk[0]}
			if fd.isStream && len(chunk) > maxRW {
				iov.SetLen(maxRW)
				iovecs = append(iovecs, iov)
				break // the rest of this chunk goes in the next batch
			}
			iov.SetLen(len(chunk))
			iovecs = append(iovecs, iov)
			if len(iovecs) == maxIovecs {
				break
			}
		}
		if len(iovecs) == 0 {
			break
		}
		*iovp = iovecs
		var wrote int
		if fd.hooked() {
			wrote, err = fd.writevHooked(iovecs, calls)
		} else {
			wrote, err = fd.writev(iovecs)
		}
		n += int64(wrote)
		consume(v, int64(wrote))
		clear(iovecs) // drop the references to the caller's buffers
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			if err == unix.EAGAIN && fd.Pollable() {
				if err = fd.Wait(pollfd.ModeWrite); err == nil {
					continue
				}
			}
			break
		}
		if n == 0 {
			err = io.ErrUnexpectedEOF
			break
		}
	}
	return n, err
}

// writev wraps writev(2); a failed call wrote nothing.
func (fd *FD) writev(iovecs []unix.Iovec) (int, error) {
	size := rawIOMax + 1 // counted only where it can matter
	if fd.keepsP() {
		size = 0
		for i := 0; i < len(iovecs) && size <= rawIOMax; i++ {
			size += int(iovecs[i].Len)
		}
	}
	r, e := fd.sys3(unix.SYS_WRITEV, unsafe.Pointer(&iovecs[0]), uintptr(len(iovecs)), size)
	if e != 0 {
		return 0, e
	}
	return r, nil
}

// consume removes n bytes from the front of *v, as net.Buffers does.
func consume(v *[][]byte, n int64) {
	for len(*v) > 0 {
		ln0 := int64(len((*v)[0]))
		if ln0 > n {
			(*v)[0] = (*v)[0][n:]
			return
		}
		n -= ln0
		(*v)[0] = nil
		*v = (*v)[1:]
	}
}
