//go:build linux

package gatenet_test

// Parity of Unix datagram sockets (unixgram) and of ListenPacket on
// stream networks: the same scenario on net and on gatenet (sockParity,
// helpers_sock_test.go), compared field by field.

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
)

// net.ListenPacket("unix") and ("unixpacket") succeed, oddly: they return
// a *UnixConn on a listening stream (or seqpacket) socket, whose reads
// fail and whose Close leaves the socket file behind.
func TestUDPParityListenPacketStream(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Result   udpResultObs
		Read     udpReadObs
		Accepted bool // a client can connect
		FileLeft bool
	}
	for _, network := range []string{"unix", "unixpacket"} {
		t.Run(network, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s0 sockStack) obs {
				s := udpStackOf(s0)
				path := t.TempDir() + "/s"
				names := udpNames(path, "<path>")
				pc, err := s.ListenPacket(network, path)
				o := obs{Result: udpResultObs{Err: udpObserve(err, names)}}
				if pc == nil {
					return o
				}
				o.Result.Sock = udpDescribe(t, pc.(net.Conn), names)
				require.NoError(t, pc.SetReadDeadline(time.Now().Add(time.Minute))) // a safety net
				o.Read = udpRead(pc.(net.Conn), "ReadFrom", make([]byte, 8), names)
				if c, err := net.Dial(network, path); err == nil {
					o.Accepted = true
					c.Close()
				}
				require.NoError(t, pc.Close())
				_, err = os.Stat(path)
				o.FileLeft = err == nil
				return o
			}, nil)
		})
	}
}

// Unix datagram sockets both ways: ListenUnixgram and
// ListenPacket("unixgram") exchanging with every method; an unnamed
// sender reads as a nil address (an untyped nil from ReadFrom); an
// autobound one by its abstract name, which can be answered; an empty
// datagram is (0, nil), never EOF; and the address errors.
func TestUDPParityUnixgram(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	type obs struct {
		Addrs               []string
		Writes              []udpWriteObs
		Reads               []udpReadObs
		ReadFromNilIsNil    bool // ReadFrom's Addr is an untyped nil for an unnamed sender
		Errors              []udpWriteObs
		ReadMsgFlagsCloexec bool
	}
	sockParity(t, func(t *testing.T, s0 sockStack) obs {
		s := udpStackOf(s0)
		dir := t.TempDir()
		a, err := s.ListenUnixgram("unixgram", &net.UnixAddr{Name: dir + "/a", Net: "unixgram"})
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		b := udpListenUnixgram(t, s, dir+"/b")
		auto := udpListenUnixgram(t, s, "") // autobound: "@" and 5 hex digits
		abstract := udpListenUnixgram(t, s, "@"+strings.ReplaceAll(dir, "/", "-")+"-abs")
		unnamed, err := s.Dial("unixgram", dir+"/a")
		require.NoError(t, err)
		t.Cleanup(func() { unnamed.Close() })
		names := udpNames(dir, "<dir>", abstract, "<abs>")
		var o obs
		for _, c := range []net.Conn{a, b, auto, abstract, unnamed} {
			o.Addrs = append(o.Addrs, udpAddr(names, c.LocalAddr())+" / "+udpAddr(names, c.RemoteAddr()))
		}
		buf := make([]byte, 64)
		// a → b and b → a, every write method, every read method.
		for i, kind := range unixWriteKinds {
			o.Writes = append(o.Writes, udpWrite(a, kind, []byte("a→b "+kind), b.LocalAddr(), names))
			o.Reads = append(o.Reads, udpRead(b, unixReadKinds[i], buf, names))
			o.Writes = append(o.Writes, udpWrite(b, kind, []byte("b→a "+kind), a.LocalAddr(), names))
			o.Reads = append(o.Reads, udpRead(a, unixReadKinds[i], buf, names))
		}
		// Unnamed sender: no address, whatever the method.
		for _, kind := range unixReadKinds {
			_, err := unnamed.Write([]byte("anon"))
			require.NoError(t, err)
			o.Reads = append(o.Reads, udpRead(a, kind, buf, names))
		}
		_, err = unnamed.Write([]byte("anon"))
		require.NoError(t, err)
		_, from, err := a.ReadFrom(buf)
		require.NoError(t, err)
		o.ReadFromNilIsNil = from == nil
		// Empty datagrams, connected and not.
		_, err = unnamed.Write(nil)
		require.NoError(t, err)
		o.Reads = append(o.Reads, udpRead(a, "ReadFromUnix", buf, names))
		o.Writes = append(o.Writes, udpWrite(b, "WriteToUnix", nil, a.LocalAddr(), names))
		o.Reads = append(o.Reads, udpRead(a, "Read", buf, names))
		// Autobound and abstract senders can be answered.
		for _, c := range []unixDgramConn{auto, abstract} {
			_, err = c.WriteTo([]byte("named?"), a.LocalAddr())
			require.NoError(t, err)
			var r udpReadObs
			r, from = udpReadFromUnix(a, buf, names)
			o.Reads = append(o.Reads, r)
			o.Writes = append(o.Writes, udpWrite(a, "WriteTo", []byte("reply"), from, names))
			o.Reads = append(o.Reads, udpRead(c, "ReadFrom", buf, names))
		}
		// ReadMsgUnix passes MSG_CMSG_CLOEXEC, which shows in the flags.
		_, err = b.WriteTo([]byte("msg"), a.LocalAddr())
		require.NoError(t, err)
		r := udpRead(a, "ReadMsgUnix", buf, names)
		o.Reads = append(o.Reads, r)
		o.ReadMsgFlagsCloexec = r.Flags&unix.MSG_CMSG_CLOEXEC != 0
		// Errors.
		missing := &net.UnixAddr{Name: dir + "/missing", Net: "unixgram"}
		for _, to := range []net.Addr{
			nil, (*net.UnixAddr)(nil), missing,
			&net.UnixAddr{Name: dir + "/b", Net: "unix"},       // EAFNOSUPPORT
			&net.UnixAddr{Name: dir + "/b", Net: "unixpacket"}, // EAFNOSUPPORT
			&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9},  // EINVAL
			&net.UnixAddr{Name: dir, Net: "unixgram"},          // a directory
		} {
			for _, kind := range unixWriteKinds {
				o.Errors = append(o.Errors, udpWrite(a, kind, []byte("x"), to, names))
			}
		}
		o.Errors = append(o.Errors, udpWrite(unnamed, "Write", make([]byte, 1<<20), nil, names)) // EMSGSIZE
		return o
	}, func(t *testing.T, s sockStack, o obs) {
		require.Equal(t, []string{
			"*net.UnixAddr <dir>/a / <nil>", "*net.UnixAddr <dir>/b / <nil>", "*net.UnixAddr @<auto> / <nil>",
			"*net.UnixAddr <abs> / <nil>", "*net.UnixAddr @ / *net.UnixAddr <dir>/a",
		}, o.Addrs)
		for _, w := range o.Writes {
			require.True(t, w.Err.Nil, "%+v", w)
		}
		for _, r := range o.Reads {
			require.True(t, r.Err.Nil, "%+v", r)
		}
		for _, r := range o.Reads[6:10] {
			require.Equal(t, "anon", r.Data)
			require.Contains(t, []string{"", "<nil>", "*net.UnixAddr <nil>"}, r.Addr, "an unnamed sender has no address")
		}
		require.True(t, o.ReadFromNilIsNil)
		require.Zero(t, o.Reads[10].N)
		require.Zero(t, o.Reads[11].N)
		require.True(t, o.ReadMsgFlagsCloexec)
		for _, w := range o.Errors {
			require.False(t, w.Err.Nil, "%+v", w)
			require.Equal(t, "write", w.Err.Op)
		}
	})
}

// udpReadFromUnix is ReadFromUnix observed, also returning the address.
func udpReadFromUnix(c unixDgramConn, buf []byte, names *sockNames) (udpReadObs, net.Addr) {
	n, a, err := c.ReadFromUnix(buf)
	o := udpReadObs{Kind: "ReadFromUnix", N: n, Addr: udpAddr(names, a), Err: udpObserve(err, names)}
	if n >= 0 && n <= len(buf) {
		o.Data = string(buf[:n])
	}
	if a == nil {
		return o, nil
	}
	return o, a
}

// Row 46: on a stream or seqpacket UnixConn at end of stream, Read returns
// io.EOF itself; ReadFromUnix, ReadFrom and ReadMsgUnix return what the
// running Go's net returns, all three alike: an *OpError wrapping io.EOF
// before Go 1.27, io.EOF itself from Go 1.27 (docs/TESTING.md, "Go
// releases"). The expectation admits both; gatenet must equal net.
func TestUDPParityUnixReadFromEOF(t *testing.T) {
	testutil.Watchdog(t, 2*time.Minute)
	testutil.CheckLeaks(t)
	for _, network := range []string{"unix", "unixpacket"} {
		t.Run(network, func(t *testing.T) {
			sockParity(t, func(t *testing.T, s sockStack) []udpReadObs {
				c, peer, ln := sockPair(t, s, network)
				names := udpNames(ln.Addr(), "<L>")
				_, err := peer.Write([]byte("last"))
				require.NoError(t, err)
				require.NoError(t, peer.Close())
				var o []udpReadObs
				o = append(o, udpRead(c, "ReadFromUnix", make([]byte, 16), names))
				for _, kind := range append(unixReadKinds, "ReadFromUnix") {
					o = append(o, udpRead(c, kind, make([]byte, 16), names))
				}
				return o
			}, func(t *testing.T, s sockStack, o []udpReadObs) {
				require.Equal(t, "last", o[0].Data)
				require.True(t, o[0].Err.Nil)
				bare := o[1].Err.EOF // ReadFrom's choice, which the others share
				for _, r := range o[1:] {
					require.Zero(t, r.N)
					require.True(t, r.Err.EOFIs, "%+v", r)
					switch {
					case r.Kind == "Read":
						require.True(t, r.Err.EOF, "Read: a bare io.EOF")
					case bare:
						require.True(t, r.Err.EOF, "%s: a bare io.EOF, as ReadFrom's", r.Kind)
					default:
						require.False(t, r.Err.EOF, "%s: not a bare io.EOF, as ReadFrom's", r.Kind)
						require.Equal(t, "*net.OpError", r.Err.Type)
						require.Equal(t, "read", r.Err.Op)
					}
				}
			})
		})
	}
}
