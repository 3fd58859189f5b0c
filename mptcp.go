//go:build linux

package gatenet

// Multipath TCP (RFC 8684), exactly as net offers it on Linux
// (net/mptcpsock_linux.go, net/dial.go):
//
//   - listeners use MPTCP by default and dialers do not; SetMultipathTCP
//     on a ListenConfig or Dialer overrides that, and so does the
//     multipathtcp GODEBUG setting (0: off, 1: on, 2: listeners only, the
//     default, 3: dialers only), from the environment or compiled into the
//     binary (//go:debug directives, a go.mod godebug line or go version);
//   - an MPTCP socket is socket(2) with IPPROTO_MPTCP. If that fails for
//     any reason (no kernel support, net.mptcp.enabled=0, a Control that
//     refuses it, a refused connect), the dial or listen is made again with
//     plain TCP, calling Control again, as net does;
//   - a peer without MPTCP makes the kernel fall back to plain TCP on the
//     wire; (*TCPConn).MultipathTCP reports what is in use.

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

const mptcpInfo = 1 // MPTCP_INFO, the SOL_MPTCP option (linux/mptcp.h)

// get reports whether MPTCP is to be tried, for a listener or a dialer.
func (m mptcpStatus) get(listener bool) bool {
	switch m {
	case mptcpEnabled:
		return true
	case mptcpDisabled:
		return false
	}
	switch godebugMultipathTCP() {
	case "0":
		return false
	case "1":
		return true
	case "3":
		return !listener
	}
	return listener // net's default: listeners only
}

// godebugMultipathTCP returns the multipathtcp GODEBUG setting, or "":
// the GODEBUG environment variable's, else the binary's default
// (DefaultGODEBUG in its build information), as the runtime decides.
func godebugMultipathTCP() string {
	if v := godebugValue(os.Getenv("GODEBUG"), "multipathtcp"); v != "" {
		return v
	}
	return godebugValue(defaultGODEBUG(), "multipathtcp")
}

// godebugValue returns key's value in a GODEBUG list, the last one if it
// is there more than once (the runtime's rule), or "".
func godebugValue(list, key string) string {
	v := ""
	for _, kv := range strings.Split(list, ",") {
		if val, ok := strings.CutPrefix(strings.TrimSpace(kv), key+"="); ok {
			v = val
		}
	}
	return v
}

// defaultGODEBUG is the GODEBUG settings compiled into the binary: its
// //go:debug directives, and those its main module's go.mod implies.
var defaultGODEBUG = sync.OnceValue(func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "DefaultGODEBUG" {
				return s.Value
			}
		}
	}
	return ""
})

// The kernel's support, probed once as net probes it: by creating an
// MPTCP socket.
var mptcpSupport struct {
	once        sync.Once
	available   bool
	hasSOLMPTCP bool // SOL_MPTCP answers (Linux 5.16): fallback is visible
}

func supportsMultipathTCP() bool {
	mptcpSupport.once.Do(probeMultipathTCP)
	return mptcpSupport.available
}

func probeMultipathTCP() {
	family := unix.AF_INET
	if !supportsIPv4() {
		family = unix.AF_INET6
	}
	s, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, unix.IPPROTO_MPTCP)
	switch err {
	case unix.EPROTONOSUPPORT, unix.EINVAL: // not built in (EINVAL before Linux 5.6)
		return
	case nil:
		unix.Close(s)
	}
	// Any other error: not available now, but it might be later (net's
	// reasoning: a sysctl can turn it on).
	mptcpSupport.available = true
	mptcpSupport.hasSOLMPTCP = kernelVersionAtLeast(5, 16)
}

// kernelVersionAtLeast compares uname's release ("6.18.44-…") with
// major.minor.
func kernelVersionAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	release := unix.ByteSliceToString(u.Release[:])
	maj, rest, ok1 := leadingInt(release)
	rest, ok2 := strings.CutPrefix(rest, ".")
	mnr, _, ok3 := leadingInt(rest)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	return maj > major || maj == major && mnr >= minor
}

// leadingInt parses the decimal digits s starts with.
func leadingInt(s string) (n int, rest string, ok bool) {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	return n, s[i:], err == nil
}

// usingMultipathTCP is net's isUsingMultipathTCP: on Linux 5.16 and later
// the MPTCP_INFO option fails once the connection has fallen back to plain
// TCP (EOPNOTSUPP for IPv4, ENOPROTOOPT for IPv6); before that, only the
// socket's protocol can be asked.
func usingMultipathTCP(s int) bool {
	if !supportsMultipathTCP() {
		return false
	}
	if mptcpSupport.hasSOLMPTCP {
		_, err := unix.GetsockoptInt(s, unix.SOL_MPTCP, mptcpInfo)
		return err != unix.EOPNOTSUPP && err != unix.ENOPROTOOPT
	}
	proto, _ := unix.GetsockoptInt(s, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	return proto == unix.IPPROTO_MPTCP
}

// MultipathTCP reports whether TCP dials try Multipath TCP first, as
// net's: not unless SetMultipathTCP or GODEBUG (multipathtcp=1 or 3) says
// so. It does not ask whether the kernel supports it.
func (d *Dialer) MultipathTCP() bool { return d.mptcp.get(false) }

// MultipathTCP reports whether TCP listeners try Multipath TCP first, as
// net's: yes unless SetMultipathTCP or GODEBUG (multipathtcp=0 or 3) says
// otherwise. It does not ask whether the kernel supports it.
func (lc *ListenConfig) MultipathTCP() bool { return lc.mptcp.get(true) }
