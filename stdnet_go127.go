//go:build linux && go1.27

package gatenet

// Where net's behaviour differs between Go releases, gatenet follows the net
// of the Go it is built with; this file and stdnet_go126.go hold the
// differences (docs/TESTING.md, "Go releases").

// unixReadFromWrapsEOF: UnixConn's ReadFrom, ReadFromUnix and ReadMsgUnix
// return end of stream as io.EOF itself, as Read does (net/unixsock.go).
const unixReadFromWrapsEOF = false

// ipv6ProbeDeniedIsSupport: the IPv6 capability probe also counts a bind(2)
// that a security policy refused (EPERM, EACCES) as support: the socket was
// created, so the kernel has IPv6 (net/ipsock_posix.go, golang.org/issue/77430).
const ipv6ProbeDeniedIsSupport = true
