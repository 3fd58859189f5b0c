//go:build linux

package gatenet_test

import (
	"net"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// fdIdentity is what tells a descriptor number's file apart from a later
// one's: device and inode.
type fdIdentity struct{ dev, ino uint64 }

func identify(t *testing.T, fd int) fdIdentity {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	return fdIdentity{st.Dev, st.Ino}
}

// collectedClose runs the collector until fd no longer names the file id
// named (closed, or reused for another file), failing after a generous
// bound.
func collectedClose(t *testing.T, what string, fd int, id fdIdentity) {
	t.Helper()
	for range 200 {
		runtime.GC()
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || (fdIdentity{st.Dev, st.Ino}) != id {
			return
		}
		time.Sleep(10 * time.Millisecond) // cleanups run on their own goroutine
	}
	t.Fatalf("%s: descriptor %d still open after its owner became unreachable", what, fd)
}

// rawFd is the number under anything with SyscallConn.
func rawFd(t *testing.T, c syscall.Conn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	fd := -1
	require.NoError(t, rc.Control(func(s uintptr) { fd = int(s) }))
	return fd
}

// TestDroppedWithoutCloseIsCollected: a conn, pipe or file dropped
// without Close is closed by the collector, as net's and os's are by their
// finalizers (internal/poll/fd.go's finalize: the registered descriptors
// through their pollfd.Desc, a regular file, in blocking mode, through its
// number). The leak check (open descriptors before and after) would catch
// one that stays open too; this names it.
func TestDroppedWithoutCloseIsCollected(t *testing.T) {
	testutil.CheckLeaks(t)
	type victim struct {
		what string
		fd   int
		id   fdIdentity
	}
	// openAll opens each kind in a frame of its own and returns only numbers,
	// so nothing keeps the owners reachable.
	openAll := func() []victim {
		var vs []victim
		add := func(what string, fd int) { vs = append(vs, victim{what, fd, identify(t, fd)}) }

		ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		client, err := net.Dial("tcp4", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { client.Close() })
		server, err := ln.Accept()
		require.NoError(t, err)
		require.NoError(t, ln.Close())
		add("accepted TCP conn", rawFd(t, server.(syscall.Conn)))

		r, w, err := gatenet.Pipe()
		require.NoError(t, err)
		add("pipe read end", rawFd(t, r))
		add("pipe write end", rawFd(t, w))

		f, err := gatenet.OpenFile(filepath.Join(t.TempDir(), "f"), unix.O_RDWR|unix.O_CREAT, 0o600)
		require.NoError(t, err)
		add("regular file", rawFd(t, f))
		return vs
	}
	for _, v := range openAll() {
		collectedClose(t, v.what, v.fd, v.id)
	}
}

// TestSynctestDroppedIsCollected: descriptors opened in a synctest bubble
// and dropped without Close are collected and closed too, as net's are:
// the registry that finds a bubble's peers (synctest.go) holds them
// weakly. Listeners, datagram sockets (one connected) and a conn whose
// peer is not the bubble's are the ones it keeps past their first system
// calls.
func TestSynctestDroppedIsCollected(t *testing.T) {
	testutil.CheckLeaks(t)
	outside, err := net.Listen("tcp4", "127.0.0.1:0") // the unpaired conn's peer, never recorded
	require.NoError(t, err)
	t.Cleanup(func() { outside.Close() })
	dir := t.TempDir()
	records := gatenet.BubbleRecords()

	var vs []struct {
		what string
		fd   int
		id   fdIdentity
	}
	inBubble(t, func(t *testing.T) {
		add := func(what string, c syscall.Conn) {
			fd := rawFd(t, c)
			vs = append(vs, struct {
				what string
				fd   int
				id   fdIdentity
			}{what, fd, identify(t, fd)})
		}
		ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		add("TCP listener", ln.(syscall.Conn))
		uln, err := gatenet.Listen("unix", filepath.Join(dir, "s"))
		require.NoError(t, err)
		add("Unix listener", uln.(syscall.Conn))
		c, err := gatenet.Dial("tcp4", outside.Addr().String())
		require.NoError(t, err)
		add("unpaired TCP conn", c.(syscall.Conn))
		u, err := gatenet.ListenPacket("udp4", "127.0.0.1:0")
		require.NoError(t, err)
		add("UDP socket", u.(syscall.Conn))
		cu, err := gatenet.Dial("udp4", u.LocalAddr().String())
		require.NoError(t, err)
		add("connected UDP socket", cu.(syscall.Conn))
		g, err := gatenet.ListenPacket("unixgram", filepath.Join(dir, "g"))
		require.NoError(t, err)
		add("unixgram socket", g.(syscall.Conn))
	})
	require.Greater(t, gatenet.BubbleRecords(), records)
	for _, v := range vs {
		collectedClose(t, v.what, v.fd, v.id)
	}
	// The cleanups that take the entries out run a collection after the
	// finalizers.
	for range 200 {
		if gatenet.BubbleRecords() == records {
			return
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the registry still lists %d descriptors, %d before", gatenet.BubbleRecords(), records)
}
