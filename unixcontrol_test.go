//go:build linux

package gatenet_test

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// unixPair is testutil.Pair over a Unix socket in a temp dir.
func unixPair(t *testing.T) (a, b *gatenet.UnixConn) {
	c, s := testutil.Pair(t, "unix", t.TempDir()+"/s")
	return c.(*gatenet.UnixConn), s.(*gatenet.UnixConn)
}

// TestSCMRights passes a pipe's write end over a Unix socket; the receiver
// writes through it, and the received descriptor is close-on-exec.
func TestSCMRights(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	a, b := unixPair(t)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()

	rc, err := w.SyscallConn()
	require.NoError(t, err)
	var oob []byte
	require.NoError(t, rc.Control(func(fd uintptr) { oob = unix.UnixRights(int(fd)) }))
	n, oobn, err := a.WriteMsgUnix(nil, oob, nil) // empty payload: one dummy byte goes
	require.NoError(t, err)
	require.Equal(t, 0, n)
	require.Equal(t, len(oob), oobn)
	require.NoError(t, w.Close()) // the receiver's copy keeps the pipe open

	buf := make([]byte, 16)
	rcvOOB := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err = b.ReadMsgUnix(buf, rcvOOB)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the dummy byte")
	msgs, err := unix.ParseSocketControlMessage(rcvOOB[:oobn])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	fds, err := unix.ParseUnixRights(&msgs[0])
	require.NoError(t, err)
	require.Len(t, fds, 1)

	flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0)
	require.NoError(t, err)
	require.NotZero(t, flags&unix.FD_CLOEXEC, "received descriptors are close-on-exec")

	got := gatenet.NewFile(uintptr(fds[0]), "received")
	_, err = got.Write([]byte("through the passed fd"))
	require.NoError(t, err)
	require.NoError(t, got.Close())
	all, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Equal(t, "through the passed fd", string(all))
}

// TestSCMCredentials sends the process's credentials and reads them back.
func TestSCMCredentials(t *testing.T) {
	testutil.CheckLeaks(t)
	a, b := unixPair(t)
	testutil.SetsockoptInt(t, b, unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	cred := &unix.Ucred{Pid: int32(os.Getpid()), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	_, _, err := a.WriteMsgUnix([]byte("c"), unix.UnixCredentials(cred), nil)
	require.NoError(t, err)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	_, oobn, _, _, err := b.ReadMsgUnix(make([]byte, 1), oob)
	require.NoError(t, err)
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	got, err := unix.ParseUnixCredentials(&msgs[0])
	require.NoError(t, err)
	require.Equal(t, *cred, *got)
}
