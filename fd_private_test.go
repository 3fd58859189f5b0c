//go:build linux

package gatenet_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestPrivateSockets: the sockets gatenet makes itself, dialled, accepted
// and listening for datagrams, are private (their reads and writes keep
// the P: internal/poll/fd_sys.go); a socket whose number was handed out
// (File, SyscallConn, a Dialer's Control), or that was made from the
// caller's descriptor (FileConn), is not, for good.
func TestPrivateSockets(t *testing.T) {
	testutil.CheckLeaks(t)
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dial := func(d *gatenet.Dialer) (client, server *gatenet.TCPConn) {
		c, err := d.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		s, err := ln.Accept()
		require.NoError(t, err)
		t.Cleanup(func() { c.Close(); s.Close() })
		return c.(*gatenet.TCPConn), s.(*gatenet.TCPConn)
	}

	c, s := dial(new(gatenet.Dialer))
	assert.True(t, gatenet.Private(c), "dialled")
	assert.True(t, gatenet.Private(s), "accepted")
	_, err = c.MultipathTCP()
	require.NoError(t, err)
	assert.True(t, gatenet.Private(c), "MultipathTCP looks at the socket without handing it out")

	rc, err := c.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(uintptr) {}))
	assert.False(t, gatenet.Private(c), "after SyscallConn's Control")

	f, err := s.File()
	require.NoError(t, err)
	assert.False(t, gatenet.Private(s), "after File")
	fc, err := gatenet.FileConn(f)
	require.NoError(t, err)
	f.Close()
	defer fc.Close()
	assert.False(t, gatenet.Private(fc.(gatenet.Pollable)), "made by FileConn")

	c, _ = dial(&gatenet.Dialer{Control: func(string, string, syscall.RawConn) error { return nil }})
	assert.True(t, gatenet.Private(c), "dialled with a Control function that did not look at the descriptor")
	c, s = dial(&gatenet.Dialer{Control: func(_, _ string, rc syscall.RawConn) error { return rc.Control(func(uintptr) {}) }})
	assert.False(t, gatenet.Private(c), "dialled with a Control function that was handed the descriptor")
	assert.True(t, gatenet.Private(s))

	u, err := gatenet.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer u.Close()
	assert.True(t, gatenet.Private(u), "a datagram socket")
}

// TestHandedOutBlockingDescriptor: a ReadyQueue member whose description
// was made blocking behind gatenet's back — through the *os.File of File,
// which shares it, or by a Dialer's Control — blocks only its own thread
// in a read, as over net: a garbage
// collection, which must stop every P, completes while the read waits in
// the kernel. Were the read a raw system call it would hold its P, and
// the collection, and the program, would wait for the peer. Each case
// runs in a child (blockingReadChild), which a hang leaves to the
// watchdog's kill.
func TestHandedOutBlockingDescriptor(t *testing.T) {
	for _, how := range []string{"file", "control"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := child("blocking-read:" + how)
			out, err := runToEnd(ctx, cmd)
			require.NoError(t, ctx.Err(), "the child hung: a read on a blocking descriptor kept its P")
			require.NoError(t, err, "child: %s", out)
		})
	}
}

// runToEnd runs cmd to its end, killed if ctx ends first, and returns its
// combined output.
func runToEnd(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	cmd.WaitDelay = time.Second
	stop := context.AfterFunc(ctx, func() { cmd.Process.Kill() })
	defer stop()
	return cmd.CombinedOutput()
}

// blockingReadChild is the child's side of TestHandedOutBlockingDescriptor:
// a dialled conn made blocking as how says and added to a ReadyQueue, a
// read that waits in the kernel, a collection, and then the byte that
// ends the read.
func blockingReadChild(how string) int {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 3
	}
	defer ln.Close()
	var d gatenet.Dialer
	if how == "control" {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var err error
			if cerr := rc.Control(func(fd uintptr) { err = unix.SetNonblock(int(fd), false) }); cerr != nil {
				return cerr
			}
			return err
		}
	}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 4
	}
	defer c.Close()
	if how == "file" {
		f, err := c.(*gatenet.TCPConn).File()
		if err != nil {
			return 5
		}
		defer f.Close()
		// What a program handed the File may do (a child whose stdin it
		// becomes, a library that wants blocking I/O): the description is
		// the conn's too.
		if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
			return 5
		}
	}
	s, err := ln.Accept()
	if err != nil {
		return 6
	}
	defer s.Close()
	q := gatenet.NewReadyQueue() // a member's reads are the ones that may keep the P
	defer q.Close()
	if err := q.Add(c.(gatenet.Pollable)); err != nil {
		return 10
	}
	if fl, err := unix.FcntlInt(uintptr(sysfd(c)), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		os.Stderr.WriteString("the conn is still non-blocking\n")
		return 7
	}
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	time.Sleep(100 * time.Millisecond) // not needed to pass: it lets the read reach the kernel, so that a regression hangs
	runtime.GC()
	if _, err := s.Write([]byte{1}); err != nil {
		return 8
	}
	if err := <-read; err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 9
	}
	return 0
}

// sysfd is c's descriptor number, read through a RawConn (which hands it
// out: call it only once c is private no longer).
func sysfd(c net.Conn) int {
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	rc.Control(func(s uintptr) { fd = int(s) })
	return fd
}
