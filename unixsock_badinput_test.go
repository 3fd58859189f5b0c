//go:build linux

package gatenet_test

// Issue 5's "Bad input" for descriptor passing, side by side with net:
// an oob buffer too small for the rights sent (MSG_CTRUNC, and which
// descriptors the kernel installed), control messages a raw peer crafts
// (the kernel's verdict, what reaches the receiver), and invalid
// descriptor numbers in rights being sent (EBADF, nothing delivered,
// nothing leaked). gatenet.ParseUnixControl is applied to what each stack
// received: it hands over every descriptor or closes every one.

import (
	"encoding/binary"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// openNulls opens /dev/null n times (close-on-exec): descriptors to send.
func openNulls(t testing.TB, n int) []int {
	t.Helper()
	fds := make([]int, n)
	for i := range fds {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		require.NoError(t, err)
		fds[i] = fd
	}
	return fds
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// controlObs is ParseUnixControl's verdict on received control data, and
// how many descriptors it left open (its Rights, which the test then
// closes) — never any after an error.
type controlObs struct {
	Rights  int
	Cred    bool
	Err     string
	LeftNow int // open descriptors after the parse, relative to before the read
}

// parseReceived parses oob/flags with gatenet.ParseUnixControl, closes
// the rights it hands over, and reports.
func parseReceived(t testing.TB, oob []byte, flags, beforeRead int) controlObs {
	t.Helper()
	ctl, err := gatenet.ParseUnixControl(oob, flags)
	o := controlObs{Rights: len(ctl.Rights), Cred: ctl.Cred != nil}
	if err != nil {
		o.Err = err.Error()
		require.Nil(t, ctl.Rights, "no descriptors with an error")
	}
	for _, fd := range ctl.Rights { // what was handed over is open; then closed
		_, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		require.NoError(t, ferr, "a handed-over descriptor is open")
	}
	closeFDs(ctl.Rights)
	closeFDs(ctl.PidFDs)
	o.LeftNow = testutil.OpenFDs(t) - beforeRead
	return o
}

// rightsReadObs is one ReadMsgUnix of a message carrying rights.
type rightsReadObs struct {
	OOBLen, N, OOBN int
	CTrunc          bool
	Installed       int // descriptors the read put in the process
	XSysRights      int // what unix.ParseSocketControlMessage + ParseUnixRights find
	XSysErr         string
	Control         controlObs
}

// TestUnixBadInputParityRightsTruncated: three descriptors sent; read
// with oob buffers from none to ample. Where the buffer is short the
// kernel installs what fits (none below a header, one in 20 bytes, two in
// CMSG_SPACE(8)) and sets MSG_CTRUNC, on both stacks alike; net leaves
// those to the caller, ParseUnixControl closes them.
func TestUnixBadInputParityRightsTruncated(t *testing.T) {
	unixParity(t, func(t *testing.T, s sockStack, a, b unixDgramConn) []rightsReadObs {
		var o []rightsReadObs
		for _, oobLen := range []int{0, 8, unix.CmsgSpace(4) - 4, unix.CmsgSpace(8), unix.CmsgSpace(12), 1024} {
			fds := openNulls(t, 3)
			_, _, err := a.WriteMsgUnix([]byte("x"), unix.UnixRights(fds...), nil)
			closeFDs(fds)
			require.NoError(t, err)
			before := testutil.OpenFDs(t)
			buf, oob := make([]byte, 8), make([]byte, oobLen)
			n, oobn, flags, _, err := b.ReadMsgUnix(buf, oob)
			require.NoError(t, err)
			r := rightsReadObs{OOBLen: oobLen, N: n, OOBN: oobn, CTrunc: flags&unix.MSG_CTRUNC != 0,
				Installed: testutil.OpenFDs(t) - before}
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err != nil {
				r.XSysErr = err.Error()
			} else {
				for i := range msgs {
					got, err := unix.ParseUnixRights(&msgs[i])
					if err != nil {
						r.XSysErr = err.Error()
					}
					r.XSysRights += len(got)
				}
			}
			r.Control = parseReceived(t, oob[:oobn], flags, before)
			o = append(o, r)
		}
		return o
	}, func(t *testing.T, s sockStack, o []rightsReadObs) {
		for i, want := range []struct {
			installed int
			ctrunc    bool
		}{{0, true}, {0, true}, {1, true}, {2, true}, {3, false}, {3, false}} {
			r := o[i]
			require.Equal(t, 1, r.N, "%+v", r)
			require.Equal(t, want.installed, r.Installed, "%+v", r)
			require.Equal(t, want.ctrunc, r.CTrunc, "%+v", r)
			require.Equal(t, want.installed, r.XSysRights, "x/sys sees what was installed: %+v", r)
			require.Zero(t, r.Control.LeftNow, "ParseUnixControl leaked: %+v", r)
			if want.ctrunc {
				require.Equal(t, gatenet.ErrControlTruncated.Error(), r.Control.Err, "%+v", r)
			} else {
				require.Equal(t, 3, r.Control.Rights, "%+v", r)
			}
		}
	})
}

// cmsg builds one control message with an arbitrary cmsg_len, padded to
// total bytes (at least the header).
func cmsg(clen uint64, level, typ int32, data []byte, total int) []byte {
	b := make([]byte, max(total, unix.SizeofCmsghdr+len(data)))
	binary.NativeEndian.PutUint64(b, clen) // 64-bit Linux: size_t cmsg_len
	binary.NativeEndian.PutUint32(b[8:], uint32(level))
	binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	copy(b[unix.SizeofCmsghdr:], data)
	return b
}

func int32s(v ...int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.NativeEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

// malformedCase is control data a raw peer hands sendmsg(2).
type malformedCase struct {
	name string
	oob  func(validFD int) []byte
}

func malformedCases() []malformedCase {
	const h = unix.SizeofCmsghdr
	ucred := func(pid int32) []byte {
		return int32s(pid, int32(os.Getuid()), int32(os.Getgid()))
	}
	return []malformedCase{
		{"cmsg_len below header", func(int) []byte { return cmsg(8, unix.SOL_SOCKET, unix.SCM_RIGHTS, nil, 24) }},
		{"cmsg_len past buffer", func(fd int) []byte { return cmsg(64, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(int32(fd)), 24) }},
		{"unknown SOL_SOCKET type", func(int) []byte { return cmsg(h+4, unix.SOL_SOCKET, 99, int32s(0), 24) }},
		{"SCM_RIGHTS of 3 bytes", func(fd int) []byte { return cmsg(h+3, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(int32(fd)), 24) }},
		{"SCM_RIGHTS of 6 bytes", func(fd int) []byte { return cmsg(h+6, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(int32(fd), 0), 24) }},
		{"SCM_RIGHTS -1", func(int) []byte { return cmsg(h+4, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(-1), 24) }},
		{"SCM_CREDENTIALS short", func(int) []byte {
			return cmsg(h+8, unix.SOL_SOCKET, unix.SCM_CREDENTIALS, ucred(int32(os.Getpid()))[:8], 24)
		}},
		{"SCM_CREDENTIALS foreign pid", func(int) []byte {
			return cmsg(h+12, unix.SOL_SOCKET, unix.SCM_CREDENTIALS, ucred(1), 32)
		}},
		{"level not SOL_SOCKET", func(fd int) []byte { return cmsg(h+4, unix.IPPROTO_IP, unix.SCM_RIGHTS, int32s(int32(fd)), 24) }},
	}
}

// malformedObs is one case's outcome: the kernel's verdict on the raw
// send, what the stack's receiver got, and the stack's own WriteMsgUnix
// given the same bytes.
type malformedObs struct {
	Case        string
	RawErrno    string
	N, OOBN     int
	CTrunc      bool
	Control     controlObs
	WriteErr    sockErrObs
	WriteIgnore bool // the stack's send went through (the raw peer drained it)
}

// TestUnixBadInputParityMalformedFromPeer: a raw peer (unix.Sendmsg on a
// socketpair) sends crafted control messages to a conn of each stack
// (FileConn of the other end). The kernel validates control data on send:
// a bad cmsg_len, an unknown type, bad credentials or a bad descriptor
// fail there (EINVAL, EPERM, EBADF) and nothing reaches the receiver;
// what it accepts (a short SCM_RIGHTS, another level) arrives well formed.
// The same bytes through the stack's own WriteMsgUnix fail with net's
// *net.OpError. The receiver never panics or leaks.
func TestUnixBadInputParityMalformedFromPeer(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	sockParity(t, func(t *testing.T, s sockStack) []malformedObs {
		sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		raw := sp[0]
		t.Cleanup(func() { unix.Close(raw) })
		f := os.NewFile(uintptr(sp[1]), "socketpair")
		nc, err := s.FileConn(f)
		f.Close()
		require.NoError(t, err)
		t.Cleanup(func() { nc.Close() })
		conn := nc.(unixDgramConn)
		names := udpNames(conn, "<conn>")

		valid := openNulls(t, 1)[0]
		defer unix.Close(valid)
		var o []malformedObs
		for _, tc := range malformedCases() {
			oob := tc.oob(valid)
			r := malformedObs{Case: tc.name}
			if err := unix.Sendmsg(raw, []byte("m"), oob, nil, 0); err != nil {
				r.RawErrno = unix.ErrnoName(err.(syscall.Errno))
			}
			// A marker follows, so the receiver reads whatever arrived
			// (or just the marker) without blocking.
			require.NoError(t, unix.Sendmsg(raw, []byte("!"), nil, nil, 0))
			before := testutil.OpenFDs(t)
			buf, rcv := make([]byte, 1), make([]byte, 256)
			n, oobn, flags, _, err := conn.ReadMsgUnix(buf, rcv)
			require.NoError(t, err)
			r.N, r.OOBN, r.CTrunc = n, oobn, flags&unix.MSG_CTRUNC != 0
			r.Control = parseReceived(t, rcv[:oobn], flags, before)
			if buf[0] == 'm' { // the crafted message arrived: the marker is next
				_, err = conn.Read(buf)
				require.NoError(t, err)
			}
			require.Equal(t, byte('!'), buf[0])

			// The stack's own send of the same bytes.
			_, _, err = conn.WriteMsgUnix([]byte("w"), oob, nil)
			r.WriteErr = sockObserve(err, names)
			if err == nil {
				r.WriteIgnore = true
				drainRaw(t, raw)
			}
			o = append(o, r)
		}
		return o
	}, func(t *testing.T, s sockStack, o []malformedObs) {
		verdict := map[string]string{
			"cmsg_len below header":       "EINVAL",
			"cmsg_len past buffer":        "EINVAL",
			"unknown SOL_SOCKET type":     "EINVAL",
			"SCM_RIGHTS of 3 bytes":       "",
			"SCM_RIGHTS of 6 bytes":       "",
			"SCM_RIGHTS -1":               "EBADF",
			"SCM_CREDENTIALS short":       "EINVAL",
			"SCM_CREDENTIALS foreign pid": "EPERM", // "" with CAP_SYS_ADMIN
			"level not SOL_SOCKET":        "",
		}
		for _, r := range o {
			if r.Case != "SCM_CREDENTIALS foreign pid" || r.RawErrno != "" {
				require.Equal(t, verdict[r.Case], r.RawErrno, "%+v", r)
			}
			require.Zero(t, r.Control.LeftNow, "%+v", r)
			require.Empty(t, r.Control.Err, "the kernel delivers only well-formed control data: %+v", r)
			if r.RawErrno != "" {
				require.Equal(t, "write", r.WriteErr.Op, "%+v", r)
				require.Equal(t, "*net.OpError", r.WriteErr.Type, "%+v", r)
				require.Equal(t, "sendmsg", r.WriteErr.Syscall, "%+v", r)
				require.Equal(t, r.RawErrno, r.WriteErr.Errno, "%+v", r)
				require.Zero(t, r.OOBN, "nothing arrived: %+v", r)
			}
		}
		// The kernel reads one descriptor from 6 bytes of SCM_RIGHTS (its
		// count rounds down) and delivers it well formed.
		require.Equal(t, 1, o[4].Control.Rights, "%+v", o[4])
		require.Zero(t, o[3].Control.Rights, "%+v", o[3])
	})
}

// drainRaw reads one message from a raw socket and closes any descriptors
// it carried.
func drainRaw(t testing.TB, fd int) {
	t.Helper()
	buf, oob := make([]byte, 16), make([]byte, 256)
	_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	require.NoError(t, err)
	ctl, err := gatenet.ParseUnixControl(oob[:oobn], 0)
	require.NoError(t, err)
	closeFDs(ctl.Rights)
}

// badRightsObs is one send of invalid rights.
type badRightsObs struct {
	Case   string
	Err    sockErrObs
	Leaked int // open descriptors after, relative to before
}

// TestUnixBadInputParityBadRights: invalid descriptor numbers in rights
// being sent (-1, a closed descriptor, a valid one next to -1) fail the
// whole sendmsg(2) with EBADF in net's *net.OpError; nothing is delivered
// (the next message read carries no control data) and nothing leaks.
func TestUnixBadInputParityBadRights(t *testing.T) {
	unixParity(t, func(t *testing.T, s sockStack, a, b unixDgramConn) []badRightsObs {
		names := udpNames(a, "<A>", b, "<B>")
		valid := openNulls(t, 1)[0]
		defer unix.Close(valid)
		// A closed descriptor: a high number, so no concurrent open
		// reuses it.
		closed, err := unix.FcntlInt(uintptr(valid), unix.F_DUPFD_CLOEXEC, 900)
		require.NoError(t, err)
		require.NoError(t, unix.Close(closed))
		var o []badRightsObs
		for _, tc := range []struct {
			name string
			fds  []int
		}{
			{"-1", []int{-1}},
			{"closed", []int{closed}},
			{"valid,-1", []int{valid, -1}},
			{"MaxInt32", []int{1<<31 - 1}},
		} {
			before := testutil.OpenFDs(t)
			_, _, err := a.WriteMsgUnix([]byte("x"), unix.UnixRights(tc.fds...), nil)
			o = append(o, badRightsObs{Case: tc.name, Err: sockObserve(err, names), Leaked: testutil.OpenFDs(t) - before})
		}
		// Nothing was delivered: the next message is the first.
		_, _, err = a.WriteMsgUnix([]byte("y"), nil, nil)
		require.NoError(t, err)
		buf, oob := make([]byte, 8), make([]byte, 64)
		n, oobn, flags, _, err := b.ReadMsgUnix(buf, oob)
		require.NoError(t, err)
		require.Equal(t, "y", string(buf[:n]))
		require.Zero(t, oobn)
		require.Zero(t, flags&unix.MSG_CTRUNC)
		return o
	}, func(t *testing.T, s sockStack, o []badRightsObs) {
		for _, r := range o {
			require.Equal(t, "*net.OpError", r.Err.Type, "%+v", r)
			require.Equal(t, "write", r.Err.Op, "%+v", r)
			require.Equal(t, "sendmsg", r.Err.Syscall, "%+v", r)
			require.Equal(t, "EBADF", r.Err.Errno, "%+v", r)
			require.Zero(t, r.Leaked, "%+v", r)
		}
	})
}

// TestParseUnixControlClosesOnError: real descriptors in well-formed
// SCM_RIGHTS messages, followed by a malformed message or with
// MSG_CTRUNC, are closed; a clean parse hands all of them over, with the
// credentials; other levels are skipped.
func TestParseUnixControlClosesOnError(t *testing.T) {
	testutil.CheckLeaks(t)
	const h = unix.SizeofCmsghdr
	rights := func(fds ...int) []byte { return unix.UnixRights(fds...) }
	cred := unix.UnixCredentials(&unix.Ucred{Pid: 7, Uid: 8, Gid: 9})
	for _, tc := range []struct {
		name    string
		oob     func(fds []int) []byte
		flags   int
		wantErr error // nil: success with all fds and the credentials
	}{
		{"clean", func(fds []int) []byte {
			return concat(rights(fds[0]), cred, cmsg(h+4, unix.IPPROTO_IP, 1, int32s(5), h+8), rights(fds[1], fds[2]))
		}, 0, nil},
		{"trailing bytes short of a header", func(fds []int) []byte {
			return concat(rights(fds...), cred, make([]byte, 8)) // ignored, as x/sys and syscall do
		}, 0, nil},
		{"MSG_CTRUNC", func(fds []int) []byte { return concat(cred, rights(fds...)) }, unix.MSG_CTRUNC, gatenet.ErrControlTruncated},
		{"bad cmsg_len after rights", func(fds []int) []byte {
			return concat(rights(fds...), cmsg(h+40, unix.SOL_SOCKET, unix.SCM_RIGHTS, nil, h+8))
		}, 0, syscall.EINVAL},
		{"odd rights after rights", func(fds []int) []byte {
			return concat(rights(fds[0], fds[1]), cmsg(h+6, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(int32(fds[2]), 0), h+8), rights(fds[2]))
		}, 0, syscall.EINVAL},
		{"negative fd after rights", func(fds []int) []byte {
			return concat(rights(fds...), cmsg(h+4, unix.SOL_SOCKET, unix.SCM_RIGHTS, int32s(-5), h+8))
		}, 0, syscall.EINVAL},
		{"bad credentials after rights", func(fds []int) []byte {
			return concat(rights(fds...), cmsg(h+8, unix.SOL_SOCKET, unix.SCM_CREDENTIALS, make([]byte, 8), h+8))
		}, 0, syscall.EINVAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.OpenFDs(t)
			fds := openNulls(t, 3)
			ctl, err := gatenet.ParseUnixControl(tc.oob(fds), tc.flags)
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, fds, ctl.Rights)
				require.Equal(t, &unix.Ucred{Pid: 7, Uid: 8, Gid: 9}, ctl.Cred)
				closeFDs(ctl.Rights)
			} else {
				require.True(t, errors.Is(err, tc.wantErr), "%v", err)
				require.Nil(t, ctl.Rights)
				t.Log(err)
				// The odd-rights case's third descriptor sits in the malformed
				// message and a later one: it is not trusted, so the test
				// closes it.
				if tc.name == "odd rights after rights" {
					unix.Close(fds[2])
				}
			}
			require.Equal(t, before, testutil.OpenFDs(t), "descriptors left open")
		})
	}
}

func concat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// unixMsgPair is sockPair on network ("unix" or "unixpacket") as the
// conns' message methods: the dialed a and the accepted b.
func unixMsgPair(t testing.TB, s sockStack, network string) (a, b unixDgramConn) {
	t.Helper()
	c, srv, _ := sockPair(t, s, network)
	return c.(unixDgramConn), srv.(unixDgramConn)
}

// unixParity is sockParity once per connection-oriented Unix network,
// "unix" and "unixpacket", each in a subtest of its name, under a
// watchdog; the scenario gets a connected pair (unixMsgPair).
func unixParity[T any](t *testing.T, scenario func(t *testing.T, s sockStack, a, b unixDgramConn) T, expect func(t *testing.T, s sockStack, obs T)) {
	t.Helper()
	testutil.Watchdog(t, 2*time.Minute)
	for _, network := range []string{"unix", "unixpacket"} {
		t.Run(network, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) T {
				a, b := unixMsgPair(t, s, network)
				return scenario(t, s, a, b)
			}, expect)
		})
	}
}

// TestUnixBadInputParityRightsNotRead: rights sent to a reader that takes
// no control data (Read, ReadFromUnix, ReadMsgUnix with no oob) are
// discarded by the kernel, on both stacks: the data arrives, no
// descriptor is installed, and ReadMsgUnix reports MSG_CTRUNC.
func TestUnixBadInputParityRightsNotRead(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	type obs struct {
		Kind      string
		Data      string
		CTrunc    bool
		Installed int
	}
	sockParity(t, func(t *testing.T, s sockStack) []obs {
		a, b := unixMsgPair(t, s, "unixpacket")
		var o []obs
		for _, kind := range []string{"Read", "ReadFromUnix", "ReadMsgUnix"} {
			fds := openNulls(t, 2)
			_, _, err := a.WriteMsgUnix([]byte(kind), unix.UnixRights(fds...), nil)
			closeFDs(fds)
			require.NoError(t, err)
			before := testutil.OpenFDs(t)
			buf := make([]byte, 32)
			r := obs{Kind: kind}
			var n, flags int
			switch kind {
			case "Read":
				n, err = b.Read(buf)
			case "ReadFromUnix":
				n, _, err = b.ReadFromUnix(buf)
			case "ReadMsgUnix":
				n, _, flags, _, err = b.ReadMsgUnix(buf, nil)
			}
			require.NoError(t, err)
			r.Data, r.CTrunc, r.Installed = string(buf[:n]), flags&unix.MSG_CTRUNC != 0, testutil.OpenFDs(t)-before
			o = append(o, r)
		}
		return o
	}, func(t *testing.T, s sockStack, o []obs) {
		for _, r := range o {
			require.Equal(t, r.Kind, r.Data, "%+v", r)
			require.Zero(t, r.Installed, "%+v", r)
		}
		require.True(t, o[2].CTrunc, "%+v", o[2])
	})
}
