//go:build linux

package gatenet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Control messages received with ReadMsgUnix. net leaves their parsing to
// the caller (syscall.ParseSocketControlMessage, then ParseUnixRights and
// ParseUnixCredentials), and a caller that fails half-way — a truncated
// buffer, a parse error on a later message — easily leaks the descriptors
// the kernel has already installed in the process. ParseUnixControl is
// that parse done once, owning the descriptors until it hands them over:
// whenever it returns an error, every descriptor it found is closed.

// UnixControl is what the control messages of one received message
// carried.
type UnixControl struct {
	// Rights are the descriptors SCM_RIGHTS carried, in order. They are
	// close-on-exec (ReadMsgUnix receives with MSG_CMSG_CLOEXEC) and the
	// caller owns them.
	Rights []int
	// PidFDs are the pidfds SCM_PIDFD carried (Linux 6.5+, with
	// SO_PASSPIDFD set; at most one per message). The caller owns them.
	PidFDs []int
	// Cred is the sender's SCM_CREDENTIALS (with SO_PASSCRED set), nil
	// when none came.
	Cred *unix.Ucred
}

// ErrControlTruncated is ParseUnixControl's error when the kernel had to
// truncate the control data (MSG_CTRUNC: the oob buffer was too small).
// Descriptors that did not fit were closed by the kernel; those that did
// were closed by ParseUnixControl.
var ErrControlTruncated = errors.New("gatenet: control data truncated (MSG_CTRUNC): received descriptors closed")

// ParseUnixControl parses the control data of a received message, oob[:oobn]
// and flags as (*UnixConn).ReadMsgUnix (recvmsg(2)) returned them: the
// descriptors of SCM_RIGHTS and SCM_PIDFD and the credentials of
// SCM_CREDENTIALS; control messages of other levels and types are
// skipped. It mirrors what a caller of (*net.UnixConn).ReadMsgUnix does
// with syscall.ParseSocketControlMessage, ParseUnixRights and
// ParseUnixCredentials, except that it never leaks: when it returns an
// error — ErrControlTruncated if flags has MSG_CTRUNC, an error wrapping
// syscall.EINVAL if a message is malformed — it has closed (close(2))
// every descriptor it found, and returns none.
//
// As syscall.ParseSocketControlMessage, trailing bytes too short for a
// header are ignored. A malformed message (a cmsg_len shorter than the
// header or past the buffer, SCM_RIGHTS data not a whole number of
// descriptors or holding a negative one, SCM_CREDENTIALS of the wrong
// size) is never produced by the kernel, so its contents are not
// trusted: only descriptors of the well-formed messages before it are
// closed.
func ParseUnixControl(oob []byte, flags int) (UnixControl, error) {
	return parseUnixControl(oob, flags, closeReceived)
}

func closeReceived(fd int) { unix.Close(fd) }

// cmsgAlign is CMSG_ALIGN: control messages start on a word boundary.
func cmsgAlign(n int) int {
	const salign = unix.SizeofPtr
	return (n + salign - 1) &^ (salign - 1)
}

// parseUnixControl is ParseUnixControl with the close injectable, so the
// fuzz target can check it against descriptor numbers it does not own.
func parseUnixControl(oob []byte, flags int, closeFD func(int)) (UnixControl, error) {
	var c UnixControl
	var err error
	// As syscall.ParseSocketControlMessage, trailing bytes too short for
	// a header are ignored.
	for off := 0; off+unix.SizeofCmsghdr <= len(oob); {
		level, typ, data, next, merr := cmsgAt(oob, off)
		if merr != nil {
			err = merr
			break
		}
		if level == unix.SOL_SOCKET {
			switch typ {
			case unix.SCM_RIGHTS, unix.SCM_PIDFD:
				var fds []int
				if fds, err = cmsgFDs(data, off); err != nil {
					break
				}
				if typ == unix.SCM_RIGHTS {
					c.Rights = append(c.Rights, fds...)
				} else {
					c.PidFDs = append(c.PidFDs, fds...)
				}
			case unix.SCM_CREDENTIALS:
				if len(data) != unix.SizeofUcred {
					err = malformedControl(off, fmt.Sprintf("SCM_CREDENTIALS of %d bytes, want %d", len(data), unix.SizeofUcred))
					break
				}
				c.Cred = &unix.Ucred{
					Pid: int32(binary.NativeEndian.Uint32(data[0:])),
					Uid: binary.NativeEndian.Uint32(data[4:]),
					Gid: binary.NativeEndian.Uint32(data[8:]),
				}
			}
		}
		if err != nil {
			break
		}
		off = next
	}
	if flags&unix.MSG_CTRUNC != 0 {
		err = ErrControlTruncated // the more useful report, even if a message is cut
	}
	if err != nil {
		for _, fd := range c.Rights {
			closeFD(fd)
		}
		for _, fd := range c.PidFDs {
			closeFD(fd)
		}
		return UnixControl{}, err
	}
	return c, nil
}

// cmsgAt decodes the control message header at off: its level, type,
// data, and where the next message starts.
func cmsgAt(oob []byte, off int) (level, typ int32, data []byte, next int, err error) {
	rest := oob[off:] // holds a header: the caller checked
	// struct cmsghdr: a size_t length, then two ints.
	var clen uint64
	lenSize := unix.SizeofCmsghdr - 8
	if lenSize == 8 {
		clen = binary.NativeEndian.Uint64(rest)
	} else {
		clen = uint64(binary.NativeEndian.Uint32(rest))
	}
	level = int32(binary.NativeEndian.Uint32(rest[lenSize:]))
	typ = int32(binary.NativeEndian.Uint32(rest[lenSize+4:]))
	if clen < unix.SizeofCmsghdr || clen > uint64(len(rest)) {
		return 0, 0, nil, 0, malformedControl(off, fmt.Sprintf("cmsg_len %d outside [%d, %d]", clen, unix.SizeofCmsghdr, len(rest)))
	}
	return level, typ, rest[unix.SizeofCmsghdr:clen], off + cmsgAlign(int(clen)), nil
}

// cmsgFDs decodes the descriptors of an SCM_RIGHTS or SCM_PIDFD message.
func cmsgFDs(data []byte, off int) ([]int, error) {
	if len(data)%4 != 0 {
		return nil, malformedControl(off, fmt.Sprintf("descriptor data of %d bytes, not a multiple of 4", len(data)))
	}
	fds := make([]int, 0, len(data)/4)
	for i := 0; i < len(data); i += 4 {
		fd := int(int32(binary.NativeEndian.Uint32(data[i:])))
		if fd < 0 {
			return nil, malformedControl(off, fmt.Sprintf("negative descriptor %d", fd))
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

func malformedControl(off int, why string) error {
	return fmt.Errorf("gatenet: malformed control message at offset %d: %s: %w", off, why, syscall.EINVAL)
}
