//go:build linux

package gatenet

import (
	"io"
	"os"
	"syscall"
)

type regularFile interface {
	Stat() (os.FileInfo, error)
	SyscallConn() (syscall.RawConn, error)
}

// sendFile is TCPConn.ReadFrom's zero-copy path, as net's: r an *os.File
// or a gatenet *File (or either inside an *io.LimitedReader, whose N is
// updated), sent with sendfile(2) from its current offset. handled false:
// r is not a file, or the kernel refused it (a pipe, say) before a byte
// moved, and the caller copies through a buffer.
func (fd *netFD) sendFile(r io.Reader) (written int64, err error, handled bool) {
	var remain int64 // 0: to the end of the file
	lr, ok := r.(*io.LimitedReader)
	if ok {
		remain, r = lr.N, lr.R
		if remain <= 0 {
			return 0, nil, true
		}
	}
	// Any regular file that offers its descriptor: *os.File, a gatenet
	// *File, and the wrapper *os.File's own WriteTo hands io.Copy (it
	// embeds the *os.File), which is how io.Copy(conn, file) arrives here.
	f, ok := r.(regularFile)
	if !ok {
		return 0, nil, false
	}
	if st, serr := f.Stat(); serr != nil || !st.Mode().IsRegular() {
		return 0, nil, false
	}
	sc, serr := f.SyscallConn()
	if serr != nil {
		return 0, nil, false
	}
	var werr error
	err = sc.Read(func(src uintptr) bool {
		written, werr, handled = fd.pfd.SendFile(int(src), remain)
		return true
	})
	if err == nil {
		err = werr
	}
	if lr != nil {
		lr.N = remain - written
	}
	return written, wrapSyscallError("sendfile", err), handled
}
