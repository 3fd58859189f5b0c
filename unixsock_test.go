//go:build linux

package gatenet_test

// FileConn/FileListener, Unix socket files and abstract names.

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestSockFileRoundTrip: a net listener's File becomes a gatenet
// listener; a gatenet conn's File becomes a gatenet conn; data passes
// through the copies, and each copy closes independently of its original.
func TestSockFileRoundTrip(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			testutil.CheckLeaks(t)
			nln, err := net.Listen(network, sockAddress(t, network))
			require.NoError(t, err)
			defer nln.Close()
			lf, err := nln.(sockListener).File()
			require.NoError(t, err)
			gln, err := gatenet.FileListener(lf)
			require.NoError(t, err)
			require.NoError(t, lf.Close(), "the File is independent of the listener made from it")
			defer gln.Close()
			require.Equal(t, nln.Addr().String(), gln.Addr().String())
			require.IsType(t, nln.Addr(), gln.Addr())

			// Accept on the gatenet copy of net's listening socket.
			c, srv, err := testutil.Connect(gln, func() (net.Conn, error) { return gatenet.Dial(network, nln.Addr().String()) })
			require.NoError(t, err)
			defer c.Close()
			defer srv.Close()

			// A gatenet conn → File → FileConn, and data both ways.
			f, err := c.(sockConn).File()
			require.NoError(t, err)
			fc, err := gatenet.FileConn(f)
			require.NoError(t, err)
			defer fc.Close()
			require.Equal(t, c.LocalAddr().String(), fc.LocalAddr().String())
			require.Equal(t, c.RemoteAddr().String(), fc.RemoteAddr().String())
			if network == "tcp" {
				require.IsType(t, &gatenet.TCPConn{}, fc)
				require.Equal(t, sockKeepAlive{1, 15, 15, 9}, sockKeepAliveOf(t, fc), "FileConn TCP gets net's 15 s keep-alive")
				require.Equal(t, 1, sockOpt(t, fc, unix.IPPROTO_TCP, unix.TCP_NODELAY))
			} else {
				require.IsType(t, &gatenet.UnixConn{}, fc)
			}
			nb, cloexec := sockFlags(t, fc)
			require.True(t, nb && cloexec)

			require.Equal(t, "via-copy", sendRecv(t, fc, srv, "via-copy"))

			// Closing the File and the original leaves the FileConn working.
			require.NoError(t, f.Close())
			require.NoError(t, c.Close())
			require.Equal(t, "back", sendRecv(t, srv, fc, "back"))
			require.NoError(t, fc.Close())

			// The net listener still works after its gatenet copy closes.
			require.NoError(t, gln.Close())
			c2, a2, err := testutil.Connect(nln, func() (net.Conn, error) { return net.Dial(network, nln.Addr().String()) })
			require.NoError(t, err)
			defer c2.Close()
			a2.Close()
		})
	}
}

// TestSockParityFileErrors: FileConn and FileListener of a non-socket,
// and of a closed *os.File (net's fcntl of Fd's -1 fails with EBADF).
func TestSockParityFileErrors(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct{ Conn, Listener, ClosedConn, ClosedListener sockErrObs }
	sockParity(t, func(t *testing.T, s sockStack) obs {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		c, err := s.FileConn(r)
		require.Nil(t, c)
		var o obs
		o.Conn = sockObserve(err, nil)
		ln, err := s.FileListener(r)
		require.Nil(t, ln)
		o.Listener = sockObserve(err, nil)

		require.NoError(t, w.Close())
		c, err = s.FileConn(w)
		require.Nil(t, c)
		o.ClosedConn = sockObserve(err, nil)
		ln, err = s.FileListener(w)
		require.Nil(t, ln)
		o.ClosedListener = sockObserve(err, nil)
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, "file", o.Conn.Op)
		require.Equal(t, "file+net", o.Conn.Net)
		require.Equal(t, "ENOTSOCK", o.Conn.Errno)
		for _, e := range []sockErrObs{o.ClosedConn, o.ClosedListener} {
			require.Equal(t, "file", e.Op)
			require.Equal(t, "fcntl", e.Syscall)
			require.Equal(t, "EBADF", e.Errno)
		}
	})
}

// TestSockParityFileOtherFamilies: FileConn of a socket of a family net
// does not serve fails as net's: getsockname's own error where the kernel
// or the syscall package refuses the name (AF_XDP, AF_VSOCK), else
// EPROTONOSUPPORT (AF_NETLINK). gatenet ignored getsockname's error and
// read names the syscall package cannot, so both were EPROTONOSUPPORT.
// A family this machine cannot open is left out.
func TestSockParityFileOtherFamilies(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		name                  string
		family, sotype, proto int
	}{
		{"xdp", unix.AF_XDP, unix.SOCK_RAW, 0},
		{"vsock", unix.AF_VSOCK, unix.SOCK_STREAM, 0},
		{"netlink", unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := unix.Socket(tc.family, tc.sotype|unix.SOCK_CLOEXEC, tc.proto)
			if err != nil {
				t.Skipf("no %s socket here: %v", tc.name, err)
			}
			f := os.NewFile(uintptr(s), tc.name)
			defer f.Close()
			sockParity(t, func(t *testing.T, st sockStack) sockErrObs {
				c, err := st.FileConn(f)
				require.Nil(t, c)
				return sockObserve(err, nil)
			}, func(t *testing.T, st sockStack, o sockErrObs) {
				require.Equal(t, "file", o.Op)
			})
		})
	}
}

// TestSockParityUnixUnlink: Close removes the socket file of a listener
// that created it, not that of a FileListener, unless SetUnlinkOnClose.
func TestSockParityUnixUnlink(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct{ Listen, FileListener, FileListenerUnlink, SetFalse bool }
	exists := func(path string) bool {
		_, err := os.Stat(path)
		return err == nil
	}
	type unlinker interface{ SetUnlinkOnClose(bool) }
	sockParity(t, func(t *testing.T, s sockStack) obs {
		var o obs
		listen := func() (net.Listener, string) {
			path := sockAddress(t, "unix")
			ln, err := s.Listen("unix", path)
			require.NoError(t, err)
			require.True(t, exists(path))
			return ln, path
		}
		fileListener := func(ln net.Listener) net.Listener {
			f, err := ln.(sockListener).File()
			require.NoError(t, err)
			defer f.Close()
			fl, err := s.FileListener(f)
			require.NoError(t, err)
			return fl
		}

		ln, path := listen()
		require.NoError(t, ln.Close())
		o.Listen = exists(path)

		ln, path = listen()
		fl := fileListener(ln)
		require.NoError(t, fl.Close())
		o.FileListener = exists(path)
		fl = fileListener(ln)
		fl.(unlinker).SetUnlinkOnClose(true)
		require.NoError(t, fl.Close())
		o.FileListenerUnlink = exists(path)
		require.NoError(t, ln.Close())

		ln, path = listen()
		ln.(unlinker).SetUnlinkOnClose(false)
		require.NoError(t, ln.Close())
		o.SetFalse = exists(path)
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, obs{Listen: false, FileListener: true, FileListenerUnlink: false, SetFalse: true}, o)
	})
}

// TestSockParityAbstract: abstract names ("@…") listen, dial and accept,
// and print as net prints them; an empty name autobinds one.
func TestSockParityAbstract(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Listener, Client, ClientPeer, Server, ServerPeer string
		Data                                             string
		Autobound                                        string // Listen("unix", "")'s name, digits masked
		AutoboundDial                                    bool   // and a dial to it works
	}
	sockParity(t, func(t *testing.T, s sockStack) obs {
		name := fmt.Sprintf("@gatenet-test-%016x", rand.Uint64())
		ln, err := s.Listen("unix", name)
		require.NoError(t, err)
		defer ln.Close()
		names := &sockNames{}
		names.add(&net.UnixAddr{Name: name, Net: "unix"}, "@<name>")
		c, srv := sockConnect(t, s, ln, sockDialOpts{})
		data := sendRecv(t, c, srv, "abs")
		o := obs{
			Listener: names.addr(ln.Addr()), Client: names.addr(c.LocalAddr()), ClientPeer: names.addr(c.RemoteAddr()),
			Server: names.addr(srv.LocalAddr()), ServerPeer: names.addr(srv.RemoteAddr()), Data: data,
		}
		require.Equal(t, name, ln.Addr().String())

		auto, err := s.Listen("unix", "")
		require.NoError(t, err)
		defer auto.Close()
		a := auto.Addr().String()
		o.Autobound = a[:1] + fmt.Sprintf("<%d chars>", len(a)-1)
		ac, _ := sockConnect(t, s, auto, sockDialOpts{})
		o.AutoboundDial = ac.RemoteAddr().String() == a
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, "*net.UnixAddr @<name>", o.Listener)
		require.Equal(t, "*net.UnixAddr @", o.Client)
		require.Equal(t, "abs", o.Data)
		require.Equal(t, "@<5 chars>", o.Autobound)
		require.True(t, o.AutoboundDial)
	})
}

// TestSockParityAbstractFullLength: an abstract name that fills all 108
// bytes of sun_path ("@" and 107) binds, connects and is sent to, as with
// net; one byte more is EINVAL for both. gatenet refused the full length
// (x/sys counts a NUL an abstract name does not have).
func TestSockParityAbstractFullLength(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Listener, Peer, Data  string
		Unbound, TooLong      sockErrObs
		GramTo, GramMsg, From string
	}
	name := func(tag string, extra int) string { // unique, 108 bytes (+extra)
		n := fmt.Sprintf("@gatenet-%s-%016x-", tag, rand.Uint64())
		return n + strings.Repeat("x", 108+extra-len(n))
	}
	sockParity(t, func(t *testing.T, s sockStack) obs {
		var o obs
		names := &sockNames{}
		stream := name("s", 0)
		names.add(&net.UnixAddr{Name: stream, Net: "unix"}, "@<stream>")
		ln, err := s.Listen("unix", stream)
		require.NoError(t, err)
		defer ln.Close()
		c, srv := sockConnect(t, s, ln, sockDialOpts{})
		o.Listener, o.Peer = names.addr(ln.Addr()), names.addr(c.RemoteAddr())
		o.Data = sendRecv(t, c, srv, "full")

		unbound, tooLong := name("u", 0), name("l", 1)
		names.add(&net.UnixAddr{Name: unbound, Net: "unix"}, "@<unbound>")
		names.add(&net.UnixAddr{Name: tooLong, Net: "unix"}, "@<too long>")
		_, err = s.Dial("unix", unbound)
		o.Unbound = sockObserve(err, names)
		_, err = s.Listen("unix", tooLong)
		o.TooLong = sockObserve(err, names)

		gram, from := name("g", 0), name("f", 0)
		names.add(&net.UnixAddr{Name: gram, Net: "unixgram"}, "@<gram>")
		names.add(&net.UnixAddr{Name: from, Net: "unixgram"}, "@<from>")
		rx, err := sockPacketListen(s, "unixgram", gram)
		require.NoError(t, err)
		defer rx.Close()
		tx, err := sockPacketListen(s, "unixgram", from)
		require.NoError(t, err)
		defer tx.Close()
		_, err = tx.WriteTo([]byte("to"), rx.LocalAddr()) // sendto(2)
		require.NoError(t, err)
		_, _, err = tx.(interface {
			WriteMsgUnix(b, oob []byte, addr *net.UnixAddr) (int, int, error)
		}).WriteMsgUnix([]byte("msg"), nil, rx.LocalAddr().(*net.UnixAddr)) // sendmsg(2)
		require.NoError(t, err)
		require.NoError(t, rx.SetReadDeadline(time.Now().Add(10*time.Second)))
		buf := make([]byte, 8)
		n, src, err := rx.ReadFrom(buf)
		require.NoError(t, err)
		o.GramTo, o.From = string(buf[:n]), names.addr(src)
		n, _, err = rx.ReadFrom(buf)
		require.NoError(t, err)
		o.GramMsg = string(buf[:n])
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, "*net.UnixAddr @<stream>", o.Listener)
		require.Equal(t, "*net.UnixAddr @<stream>", o.Peer)
		require.Equal(t, "full", o.Data)
		require.Equal(t, "ECONNREFUSED", o.Unbound.Errno)
		require.Equal(t, "EINVAL", o.TooLong.Errno)
		require.Equal(t, "to", o.GramTo)
		require.Equal(t, "msg", o.GramMsg)
		require.Equal(t, "*net.UnixAddr @<from>", o.From)
	})
}

// TestSockParityListenUnixgram: net.Listen("unixgram", path) gives a
// listener on a bound datagram socket whose Accept fails.
func TestSockParityListenUnixgram(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Addr   string
		Accept sockErrObs
	}
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) obs {
				path := ""
				if named {
					path = sockAddress(t, "unix")
				}
				ln, err := s.Listen("unixgram", path)
				require.NoError(t, err)
				defer ln.Close()
				names := &sockNames{}
				names.add(ln.Addr(), "<L>")
				_, err = ln.Accept()
				o := obs{Addr: names.addr(ln.Addr()), Accept: sockObserve(err, names)}
				if !named {
					a := ln.Addr().String() // autobound: "@" and 5 hex digits
					o.Addr += fmt.Sprintf(" (%s, %d chars)", a[:1], len(a))
				}
				return o
			}, func(t *testing.T, s sockStack, o obs) {
				require.Equal(t, "ENOTSUP", o.Accept.Errno) // alias EOPNOTSUPP
			})
		})
	}
}
