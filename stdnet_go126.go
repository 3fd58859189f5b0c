//go:build linux && !go1.27

package gatenet

// Where net's behaviour differs between Go releases, gatenet follows the net
// of the Go it is built with; this file and stdnet_go127.go hold the
// differences (docs/TESTING.md, "Go releases").

// unixReadFromWrapsEOF: UnixConn's ReadFrom, ReadFromUnix and ReadMsgUnix
// return end of stream as an *net.OpError wrapping io.EOF.
const unixReadFromWrapsEOF = true

// ipv6ProbeDeniedIsSupport: the IPv6 capability probe counts only a
// successful bind(2) as support.
const ipv6ProbeDeniedIsSupport = false
