//go:build linux

package gatenet_test

// FuzzParseUnixControl fuzzes gatenet's control-message parse
// (ParseUnixControl: SCM_RIGHTS, SCM_PIDFD, SCM_CREDENTIALS), two ways
// per input:
//
//   - raw: the fuzzed bytes and MSG_CTRUNC flag go straight to the parse,
//     with a recording close (the numbers in fuzzed bytes are not ours to
//     close). It must not panic; on success it closes nothing and agrees
//     with x/sys's parse; on error it returns nothing and closes exactly
//     the descriptors of the well-formed messages before the bad one.
//   - kernel: nfds real descriptors (and credentials, if creds) are sent
//     over a socketpair and received by a gatenet UnixConn with an oob
//     buffer of oobLen bytes (often too small: MSG_CTRUNC), then parsed
//     for real. Afterwards — the rights handed over closed by the test —
//     the process has exactly the descriptors it had before.
//
//	go test -run XXX -fuzz FuzzParseUnixControl -fuzztime 10s .

import (
	"encoding/binary"
	"os"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

func FuzzParseUnixControl(f *testing.F) {
	const h = unix.SizeofCmsghdr
	cred := unix.UnixCredentials(&unix.Ucred{Pid: 1, Uid: 2, Gid: 3})
	f.Add([]byte{}, false, uint8(0), uint16(0), false)
	f.Add(unix.UnixRights(5, 6, 7), false, uint8(3), uint16(unix.CmsgSpace(12)), false)
	f.Add(concat(cred, unix.UnixRights(9)), true, uint8(1), uint16(unix.CmsgSpace(4)-4), true)
	f.Add(concat(unix.UnixRights(4), cmsg(h+40, unix.SOL_SOCKET, unix.SCM_RIGHTS, nil, h+8)), false, uint8(2), uint16(8), false)
	f.Add(cmsg(h+6, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(3, 0), h+8), false, uint8(4), uint16(unix.CmsgSpace(8)), true)
	f.Add(cmsg(h+4, unix.SOL_SOCKET, unix.SCM_PIDFD, int32s(8), h+8), false, uint8(1), uint16(200), true)

	f.Fuzz(func(t *testing.T, raw []byte, ctrunc bool, nfds uint8, oobLen uint16, creds bool) {
		fuzzControlRaw(t, raw, ctrunc)
		fuzzControlKernel(t, int(nfds%5), int(oobLen%128), creds)
	})
}

// fuzzControlRaw checks the parse of arbitrary bytes against an
// independent walk and against x/sys.
func fuzzControlRaw(t *testing.T, raw []byte, ctrunc bool) {
	flags := 0
	if ctrunc {
		flags = unix.MSG_CTRUNC
	}
	var closed []int
	ctl, err := gatenet.ParseUnixControlWith(raw, flags, func(fd int) { closed = append(closed, fd) })
	owned, wellFormed := referenceWalk(raw)
	if err != nil {
		if ctl.Rights != nil || ctl.PidFDs != nil || ctl.Cred != nil {
			t.Fatalf("error %v with a result %+v", err, ctl)
		}
		if !slices.Equal(sorted(closed), sorted(owned)) {
			t.Fatalf("error %v: closed %v, want the well-formed prefix's %v", err, closed, owned)
		}
		if wellFormed && !ctrunc {
			t.Fatalf("error %v on well-formed data", err)
		}
		return
	}
	if len(closed) != 0 {
		t.Fatalf("success, yet closed %v", closed)
	}
	if ctrunc || !wellFormed {
		t.Fatalf("success on data that is truncated (%v) or malformed (%v)", ctrunc, !wellFormed)
	}
	if !slices.Equal(sorted(append(slices.Clone(ctl.Rights), ctl.PidFDs...)), sorted(owned)) {
		t.Fatalf("returned %v + %v, want %v", ctl.Rights, ctl.PidFDs, owned)
	}
	// x/sys (what net's callers use) reads the same.
	msgs, xerr := unix.ParseSocketControlMessage(raw)
	if xerr != nil {
		t.Fatalf("gatenet parsed what x/sys rejects (%v)", xerr)
	}
	var xrights []int
	var xcred *unix.Ucred
	for i := range msgs {
		if msgs[i].Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch msgs[i].Header.Type {
		case unix.SCM_RIGHTS:
			fds, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				t.Fatalf("x/sys: %v", err)
			}
			xrights = append(xrights, fds...)
		case unix.SCM_CREDENTIALS:
			c, err := unix.ParseUnixCredentials(&msgs[i])
			if err != nil {
				t.Fatalf("x/sys: %v", err)
			}
			xcred = c
		}
	}
	if !slices.Equal(ctl.Rights, xrights) {
		t.Fatalf("rights %v, x/sys %v", ctl.Rights, xrights)
	}
	if (ctl.Cred == nil) != (xcred == nil) || (xcred != nil && *xcred != *ctl.Cred) {
		t.Fatalf("credentials %+v, x/sys %+v", ctl.Cred, xcred)
	}
}

// referenceWalk is the contract spelled out simply: the descriptors of
// the well-formed SCM_RIGHTS/SCM_PIDFD messages up to the first malformed
// one, and whether there was none.
func referenceWalk(b []byte) (owned []int, wellFormed bool) {
	const h = unix.SizeofCmsghdr
	for off := 0; off+h <= len(b); {
		clen := binary.NativeEndian.Uint64(b[off:])
		level := int32(binary.NativeEndian.Uint32(b[off+8:]))
		typ := int32(binary.NativeEndian.Uint32(b[off+12:]))
		if clen < h || clen > uint64(len(b)-off) {
			return owned, false
		}
		data := b[off+h : off+int(clen)]
		if level == unix.SOL_SOCKET {
			switch typ {
			case unix.SCM_RIGHTS, unix.SCM_PIDFD:
				if len(data)%4 != 0 {
					return owned, false
				}
				var fds []int
				for i := 0; i < len(data); i += 4 {
					fd := int(int32(binary.NativeEndian.Uint32(data[i:])))
					if fd < 0 {
						return owned, false
					}
					fds = append(fds, fd)
				}
				owned = append(owned, fds...)
			case unix.SCM_CREDENTIALS:
				if len(data) != unix.SizeofUcred {
					return owned, false
				}
			}
		}
		off += (int(clen) + 7) &^ 7
	}
	return owned, true
}

func sorted(v []int) []int {
	v = slices.Clone(v)
	slices.Sort(v)
	return v
}

// fuzzControlKernel sends nfds real descriptors (and credentials) to a
// gatenet UnixConn, reads them with an oob buffer of oobLen bytes, parses
// for real, and checks that no descriptor is left behind.
func fuzzControlKernel(t *testing.T, nfds, oobLen int, creds bool) {
	start := testutil.OpenFDs(t)
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// (On a failure the pair may leak: the input fails anyway, and a
	// deferred close could hit a reused number after the explicit one.)
	if creds {
		if err := unix.SetsockoptInt(sp[1], unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err != nil {
			t.Fatal(err)
		}
	}
	file := os.NewFile(uintptr(sp[1]), "socketpair")
	nc, err := gatenet.FileConn(file)
	file.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn := nc.(*gatenet.UnixConn)

	fds := openNulls(t, nfds)
	var oob []byte
	if nfds > 0 {
		oob = unix.UnixRights(fds...)
	}
	err = unix.Sendmsg(sp[0], []byte("x"), oob, nil, 0)
	closeFDs(fds)
	if err != nil {
		t.Fatal(err)
	}

	before := testutil.OpenFDs(t)
	buf, rcv := make([]byte, 1), make([]byte, oobLen)
	_, oobn, flags, _, err := conn.ReadMsgUnix(buf, rcv)
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := gatenet.ParseUnixControl(rcv[:oobn], flags)
	truncated := flags&unix.MSG_CTRUNC != 0
	switch {
	case truncated && err != gatenet.ErrControlTruncated:
		t.Fatalf("MSG_CTRUNC, yet %v", err)
	case !truncated && err != nil:
		t.Fatalf("kernel data (oob %d of %d bytes) rejected: %v", oobn, oobLen, err)
	case !truncated && (len(ctl.Rights) != nfds || (ctl.Cred != nil) != creds):
		t.Fatalf("got %d rights, cred %v; sent %d, %v", len(ctl.Rights), ctl.Cred, nfds, creds)
	}
	if ctl.Cred != nil && (ctl.Cred.Pid != int32(os.Getpid()) || ctl.Cred.Uid != uint32(os.Getuid())) {
		t.Fatalf("credentials %+v", ctl.Cred)
	}
	closeFDs(ctl.Rights)
	if now := testutil.OpenFDs(t); now != before {
		t.Fatalf("%d descriptors open after the parse (and closing what it handed over), %d before the read", now, before)
	}
	conn.Close()
	unix.Close(sp[0])
	if now := testutil.OpenFDs(t); now != start {
		t.Fatalf("%d descriptors open at the end, %d at the start", now, start)
	}
}
