//go:build linux

package gatenet

import (
	"io"
	"io/fs"
	"net"
	"os"
	"reflect"
	"syscall"

	"golang.org/x/sys/unix"
)

type regularFile interface {
	Stat() (os.FileInfo, error)
	SyscallConn() (syscall.RawConn, error)
}

// sendFile is TCPConn.ReadFrom's zero-copy path, as net's: r an *os.File
// or a gatenet *File, a regular file or a character device (or either
// inside an *io.LimitedReader, whose N is updated), sent with sendfile(2)
// from its current offset. handled false:
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
	// A gatenet *File's WriteTo hands over its own wrapper.
	if w, ok := r.(fileWithoutWriteTo); ok {
		r = w.f
	}
	f, ok := r.(regularFile)
	if !ok {
		return 0, nil, false
	}
	// A regular file, or a character device that can be a sendfile
	// source (/dev/zero, /dev/urandom), as net, which tries any file. Not
	// a pipe or a socket: those the kernel refuses, and a non-blocking
	// one's EAGAIN would read as the socket's.
	if st, serr := f.Stat(); serr != nil || !st.Mode().IsRegular() && st.Mode()&fs.ModeCharDevice == 0 {
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

// fileWriteToError shapes the error of a sendfile(2) that r's WriteTo
// started, as the standard library does. io.Copy(conn, f) with f an
// *os.File goes through (*os.File).WriteTo: with a net conn, os runs
// sendfile itself and reports a failure as *fs.PathError{Op: "read",
// Path: f.Name()}; with a gatenet conn it cannot, hands io.Copy the file
// wrapped (os.fileWithoutWriteTo), and the sendfile runs here — so the
// error is shaped as os would have, not as ReadFrom's *net.OpError. The
// same for a gatenet *File's WriteTo, which mirrors *os.File's. ok is
// false when r did not come from a WriteTo: ReadFrom wraps as usual.
func fileWriteToError(r io.Reader, err error) (_ error, ok bool) {
	if w, isGatenet := r.(fileWithoutWriteTo); isGatenet {
		return w.f.wrapErr("read", err), true
	}
	t := reflect.TypeOf(r)
	if t == nil || t.Kind() != reflect.Struct || t.PkgPath() != "os" || t.Name() != "fileWithoutWriteTo" {
		return err, false
	}
	named, isNamed := r.(interface{ Name() string })
	if !isNamed {
		return err, false
	}
	if err == nil || err == io.EOF {
		return err, true
	}
	return &fs.PathError{Op: "read", Path: named.Name(), Err: err}, true
}

// sendToStdConn sends f to w, one of net's own stream conns, with
// sendfile(2) from f's current offset to its end, as os's File.WriteTo
// does for them (os reaches their descriptor; gatenet's conns send the
// file in their own ReadFrom): waiting for room in w's poller (its
// RawConn.Write), a failure f's "read" *fs.PathError around sendfile's,
// or around w's own closed or deadline error. handled false: w is not
// such a conn, f is not a regular file, or the kernel refused the pair
// before a byte moved.
func (f *File) sendToStdConn(w io.Writer) (n int64, err error, handled bool) {
	rc, _ := stdStreamConn(w)
	if rc == nil || f.fd.Pollable() {
		return 0, nil, false // a pipe or a socket is no sendfile source
	}
	if st, serr := f.Stat(); serr != nil || !st.Mode().IsRegular() {
		return 0, nil, false
	}
	handled = true
	var werr error
	called := false
	rerr := f.fd.RawRead(func(src uintptr) bool {
		werr = rc.Write(func(dst uintptr) bool {
			called = true
			for {
				m, serr := unix.Sendfile(int(dst), int(src), nil, 1<<30)
				if m > 0 {
					n += int64(m)
				}
				switch {
				case serr == unix.EINTR:
				case serr == unix.EAGAIN:
					return false // wait for room
				case serr != nil:
					err = os.NewSyscallError("sendfile", serr)
					handled = n > 0 || !(serr == unix.ENOSYS || serr == unix.EOPNOTSUPP || serr == unix.EINVAL)
					return true
				case m == 0:
					return true // f's end
				}
			}
		})
		return true
	})
	if !handled || werr != nil && !called {
		// Not handled, or w refused before a sendfile (closed, past its
		// deadline): os's SendFile says not handled then too, and net's
		// ReadFrom takes the copy over.
		return 0, nil, false
	}
	switch {
	case err != nil:
	case rerr != nil: // f closed
		err = rerr
	default:
		err = unwrapRawError(werr)
	}
	return n, f.wrapErr("read", err), true
}

// osFileWithoutReadFrom returns the *os.File inside w if w is os's
// fileWithoutReadFrom, which (*os.File).ReadFrom hands io.Copy when it
// cannot splice from the reader itself (a gatenet conn); otherwise nil.
func osFileWithoutReadFrom(w io.Writer) *os.File { return osFileInside(w, "fileWithoutReadFrom") }

// osFileWithoutWriteTo returns the *os.File inside r if r is os's
// fileWithoutWriteTo, which (*os.File).WriteTo hands io.Copy when it
// cannot send to the writer itself (a gatenet File); otherwise nil.
func osFileWithoutWriteTo(r io.Reader) *os.File { return osFileInside(r, "fileWithoutWriteTo") }

// osFileInside returns the *os.File embedded in x if x is os's type of
// that name, otherwise nil.
func osFileInside(x any, typeName string) *os.File {
	t := reflect.TypeOf(x)
	if t == nil || t.Kind() != reflect.Struct || t.PkgPath() != "os" || t.Name() != typeName {
		return nil
	}
	field := reflect.ValueOf(x).FieldByName("File")
	if !field.IsValid() || !field.CanInterface() {
		return nil
	}
	f, _ := field.Interface().(*os.File)
	return f
}

// stdStreamConn returns x's RawConn and network if x is one of net's own
// TCP or Unix stream conns, or a wrapper of one (net's TCPConn.WriteTo
// hands io.Copy its conn with WriteTo hidden), found as os finds them: a
// RawConn with net's PollFD and Network methods, on "tcp" or "unix";
// otherwise nil.
func stdStreamConn(x any) (syscall.RawConn, string) {
	sc, ok := x.(syscall.Conn)
	if !ok {
		return nil, ""
	}
	rc, err := sc.SyscallConn()
	if err != nil || rc == nil {
		return nil, ""
	}
	v := reflect.ValueOf(rc)
	network := v.MethodByName("Network")
	if !v.MethodByName("PollFD").IsValid() || !network.IsValid() {
		return nil, ""
	}
	if t := network.Type(); t.NumIn() != 0 || t.NumOut() != 1 || t.Out(0).Kind() != reflect.String {
		return nil, ""
	}
	switch n := network.Call(nil)[0].String(); n {
	case "tcp", "tcp4", "tcp6", "unix":
		return rc, n
	}
	return nil, ""
}

// netOwnConn is stdStreamConn for x of net's own types only: a
// *net.TCPConn, a *net.UnixConn, or net's tcpConnWithoutWriteTo (which
// net's TCPConn.WriteTo hands io.Copy), all that net's own ReadFrom and
// WriteTo splice with. A user's type that embeds one is not: its own
// methods must run, as with net.
func netOwnConn(x any) (syscall.RawConn, string) {
	switch x.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		t := reflect.TypeOf(x)
		if t == nil || t.Kind() != reflect.Struct || t.PkgPath() != "net" || t.Name() != "tcpConnWithoutWriteTo" {
			return nil, ""
		}
	}
	return stdStreamConn(x)
}

// unwrapRawError is the error under a net conn's RawConn's: net wraps
// it in a "raw-read" or "raw-write" *net.OpError that os's own sendfile
// and splice, which reach the conn's descriptor, do not show.
func unwrapRawError(err error) error {
	if oe, ok := err.(*net.OpError); ok && (oe.Op == "raw-read" || oe.Op == "raw-write") {
		return oe.Err
	}
	return err
}
