//go:build linux

package gatenet

import (
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/poll"
	"github.com/gatenet/gatenet/pollfd"
)

// FileConn returns a connection for a copy of f's socket, as net.FileConn:
// f stays open and independent (socket activation, inherited descriptors,
// SCM_RIGHTS). The copy is made non-blocking and registered with the
// default poller.
func FileConn(f *os.File) (net.Conn, error) {
	fd, err := newFileNetFD(f)
	if err != nil {
		return nil, fileOpError(f, err)
	}
	if _, ok := fd.localAddr().(*net.TCPAddr); ok {
		return newTCPConn(fd, defaultKeepAliveIdle, net.KeepAliveConfig{}), nil
	}
	if c := packetConnOf(fd); c != nil {
		return c, nil
	}
	fd.Close()
	return nil, fileOpError(f, unix.EINVAL)
}

// FilePacketConn returns a packet connection for a copy of f's socket, as
// net.FilePacketConn: a *UDPConn for a UDP socket, an *IPConn for a raw
// one, a *UnixConn for any Unix one. Any other socket is refused with EINVAL, untouched: unlike
// FileConn, a TCP socket is never made a *TCPConn (which would set
// TCP_NODELAY and keep-alives on the socket f shares).
func FilePacketConn(f *os.File) (net.PacketConn, error) {
	fd, err := newFileNetFD(f)
	if err != nil {
		return nil, fileOpError(f, err)
	}
	if c := packetConnOf(fd); c != nil {
		return c, nil
	}
	fd.Close()
	return nil, fileOpError(f, unix.EINVAL)
}

// packetConnOf is the conn FileConn and FilePacketConn both make of a UDP,
// raw IP or Unix socket; nil for any other.
func packetConnOf(fd *netFD) interface {
	net.Conn
	net.PacketConn
} {
	switch fd.localAddr().(type) {
	case *net.UDPAddr:
		c := newUDPConn(fd)
		c.adoptGRO()
		return c
	case *net.IPAddr:
		return newIPConn(fd)
	case *net.UnixAddr:
		return newUnixConn(fd)
	}
	return nil
}

// FileListener returns a listener for a copy of f's listening socket, as
// net.FileListener. A Unix listener made this way does not remove its
// socket file on Close (SetUnlinkOnClose changes that).
func FileListener(f *os.File) (net.Listener, error) {
	fd, err := newFileNetFD(f)
	if err != nil {
		return nil, fileOpError(f, err)
	}
	switch laddr := fd.localAddr().(type) {
	case *net.TCPAddr:
		return &TCPListener{listener: listener{fd}}, nil
	case *net.UnixAddr:
		return &UnixListener{listener: listener{fd}, path: laddr.Name, unlink: false}, nil
	}
	fd.Close()
	return nil, fileOpError(f, unix.EINVAL)
}

// fileAddr is net's address for errors about a file ("file+net").
type fileAddr string

func (fileAddr) Network() string  { return "file+net" }
func (f fileAddr) String() string { return string(f) }

// newFileNetFD duplicates f's socket (F_DUPFD_CLOEXEC, then O_NONBLOCK)
// and learns its family, type and addresses from the kernel.
func newFileNetFD(f *os.File) (*netFD, error) {
	s, err := dupOf(f)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(s, true); err != nil {
		unix.Close(s)
		return nil, os.NewSyscallError("setnonblock", err)
	}
	sotype, err := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		unix.Close(s)
		return nil, os.NewSyscallError("getsockopt", err)
	}
	// net reads the name with the syscall package, which knows fewer
	// families than x/sys: its error, where the kernel or it refuses the
	// name (AF_XDP, AF_VSOCK), is what FileConn of such a socket says.
	if _, err := syscall.Getsockname(s); err != nil {
		unix.Close(s)
		return nil, os.NewSyscallError("getsockname", err)
	}
	lsa, _ := unix.Getsockname(s)
	rsa, _ := unix.Getpeername(s)
	var family int
	var network string
	switch lsa.(type) {
	case *unix.SockaddrInet4:
		family, network = unix.AF_INET, ipNetwork(sotype)
	case *unix.SockaddrInet6:
		family, network = unix.AF_INET6, ipNetwork(sotype)
	case *unix.SockaddrUnix:
		family = unix.AF_UNIX
		switch sotype {
		case unix.SOCK_DGRAM:
			network = "unixgram"
		case unix.SOCK_SEQPACKET:
			network = "unixpacket"
		default:
			network = "unix"
		}
	default:
		unix.Close(s)
		return nil, unix.EPROTONOSUPPORT
	}
	if family != unix.AF_UNIX && sotype != unix.SOCK_STREAM && sotype != unix.SOCK_DGRAM && sotype != unix.SOCK_RAW {
		unix.Close(s)
		return nil, unix.EPROTONOSUPPORT
	}
	fd, err := newNetFD(s, family, sotype, network, pollfd.Default(), poll.AnyShard)
	if err != nil {
		return nil, err
	}
	fd.setLocalAddr(fd.addr(lsa))
	fd.raddr = fd.addr(rsa)
	return fd, nil
}

func ipNetwork(sotype int) string {
	switch sotype {
	case unix.SOCK_DGRAM:
		return "udp"
	case unix.SOCK_RAW:
		return "ip"
	}
	return "tcp"
}

// fileOpError is the error net's File* functions give for f: Op "file",
// Net "file+net", the file's name as the address.
func fileOpError(f *os.File, err error) error {
	return &net.OpError{Op: "file", Net: "file+net", Addr: fileAddr(f.Name()), Err: err}
}
