//go:build linux

package gatenet_test

import (
	"errors"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// sendMulticast sends msg to group through the loopback interface.
func sendMulticast(t *testing.T, group *net.UDPAddr, msg string) error {
	s, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer s.Close()
	rc, err := s.SyscallConn()
	require.NoError(t, err)
	var serr error
	rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInet4Addr(int(fd), unix.IPPROTO_IP, unix.IP_MULTICAST_IF, [4]byte{127, 0, 0, 1})
	})
	if serr != nil {
		return serr
	}
	_, err = s.WriteToUDP([]byte(msg), group)
	return err
}

// receiveOne reads one datagram within a generous bound.
func receiveOne(c net.PacketConn) (string, error) {
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, 64)
	n, _, err := c.ReadFrom(b)
	return string(b[:n]), err
}

func TestListenMulticastUDP(t *testing.T) {
	testutil.CheckLeaks(t)
	lo, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	// A free port, then the group on it.
	probe, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	port := probe.LocalAddr().(*net.UDPAddr).Port
	probe.Close()
	group := &net.UDPAddr{IP: net.IPv4(239, 255, 77, 1), Port: port}

	c, err := gatenet.ListenMulticastUDP("udp4", lo, group)
	if err != nil {
		t.Skipf("joining %v on lo is refused here: %v", group, err)
	}
	defer c.Close()
	// The listener is bound to the wildcard address on the group's port.
	require.Equal(t, "0.0.0.0:"+strconv.Itoa(port), c.LocalAddr().String())

	if err := sendMulticast(t, group, "to the group"); err != nil {
		t.Skipf("this kernel will not send multicast over lo: %v", err)
	}
	got, err := receiveOne(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Is it this machine? Ask net the same question.
		nc, nerr := net.ListenMulticastUDP("udp4", lo, &net.UDPAddr{IP: group.IP, Port: port + 1})
		if nerr == nil {
			defer nc.Close()
			sendMulticast(t, &net.UDPAddr{IP: group.IP, Port: port + 1}, "x")
			if _, nerr = receiveOne(nc); nerr != nil {
				t.Skipf("multicast over lo is not delivered here, to net either: %v", nerr)
			}
		}
	}
	require.NoError(t, err)
	require.Equal(t, "to the group", got)
}

func TestListenMulticastUDPBadInput(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		network string
		gaddr   *net.UDPAddr
	}{
		{"tcp", &net.UDPAddr{IP: net.IPv4(239, 1, 1, 1), Port: 9}},
		{"udp4", nil},
		{"udp4", &net.UDPAddr{Port: 9}},
	} {
		_, gerr := gatenet.ListenMulticastUDP(tc.network, nil, tc.gaddr)
		_, nerr := net.ListenMulticastUDP(tc.network, nil, tc.gaddr)
		require.Error(t, gerr)
		require.Error(t, nerr)
		require.Equal(t, nerr.Error(), gerr.Error(), "%s %v", tc.network, tc.gaddr)
	}
}

// multicastOutcome is a ListenMulticastUDP's result as text, the port
// masked; it closes the conn.
func multicastOutcome[C interface {
	LocalAddr() net.Addr
	Close() error
}](c C, err error) string {
	if err != nil {
		return (*sockNames)(nil).str(err.Error())
	}
	defer c.Close()
	return "ok " + (*sockNames)(nil).str(c.LocalAddr().String())
}

// TestListenMulticastUDPFamilies: the group's family picks the membership
// options, as net's: an IPv4 group on a "udp6" socket joins with
// IP_ADD_MEMBERSHIP (gatenet tried IPV6_JOIN_GROUP and failed with EINVAL
// where net succeeded). Each outcome compares with net's, port masked.
func TestListenMulticastUDPFamilies(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		network string
		group   net.IP
	}{
		{"udp6", net.IPv4(239, 255, 77, 2)},
		{"udp", net.IPv4(239, 255, 77, 3)},
		{"udp4", net.ParseIP("ff02::1:77")},
		{"udp6", net.ParseIP("ff02::1:78")},
	} {
		t.Run(tc.network+"/"+tc.group.String(), func(t *testing.T) {
			gaddr := &net.UDPAddr{IP: tc.group}
			want := multicastOutcome(net.ListenMulticastUDP(tc.network, nil, gaddr))
			got := multicastOutcome(gatenet.ListenMulticastUDP(tc.network, nil, gaddr))
			t.Logf("net: %s", want)
			require.Equal(t, want, got)
		})
	}
}

// TestListenMulticastUDPInterfaces: an IPv4 group is joined on the
// interface by its index (ip_mreqn), as net's on Linux, not by an IPv4
// address looked up on it: an interface with no IPv4 address joins, and
// an index with no interface fails with the kernel's error, not with an
// address error net never gives. Each outcome compares with net's.
func TestListenMulticastUDPInterfaces(t *testing.T) {
	testutil.CheckLeaks(t)
	lo, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	ifis := map[string]*net.Interface{
		"lo":          lo,
		"no such one": {Index: 1 << 30, Name: "gatenet-none"},
	}
	all, err := net.Interfaces()
	require.NoError(t, err)
	for i := range all {
		addrs, err := all[i].Addrs()
		require.NoError(t, err)
		if !slices.ContainsFunc(addrs, func(a net.Addr) bool {
			ipn, ok := a.(*net.IPNet)
			return ok && ipn.IP.To4() != nil
		}) {
			ifis["without IPv4 ("+all[i].Name+")"] = &all[i]
			break
		}
	}
	if len(ifis) == 2 {
		t.Log("every interface here has an IPv4 address: that case is not run")
	}
	for name, ifi := range ifis {
		t.Run(name, func(t *testing.T) {
			gaddr := &net.UDPAddr{IP: net.IPv4(239, 255, 77, 4)}
			want := multicastOutcome(net.ListenMulticastUDP("udp4", ifi, gaddr))
			got := multicastOutcome(gatenet.ListenMulticastUDP("udp4", ifi, gaddr))
			t.Logf("net: %s", want)
			require.Equal(t, want, got)
		})
	}
}
