//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// Name resolution and the dial's hooks, side by side with net.Dialer
// against an in-process DNS server (testutil.FakeDNS).

// contextDialer is what net.Dialer and gatenet.Dialer share here.
type contextDialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// TestDialFamilyResolvesOneFamily: "tcp4" asks for A records only and
// "tcp6" for AAAA only, as net does, so a dial never waits on the other
// family's query (here one that is never answered), and a name with no
// address of the family is net's "no such host".
func TestDialFamilyResolvesOneFamily(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	dns := testutil.NewFakeDNS(t)
	loop4, loop6 := net.IPv4(127, 0, 0, 1), net.IPv6loopback
	dns.Set("slow6.test", testutil.DNSEntry{A: []net.IP{loop4}, AAAA: []net.IP{loop6}, DropAAAA: true})
	dns.Set("slow4.test", testutil.DNSEntry{A: []net.IP{loop4}, AAAA: []net.IP{loop6}, DropA: true})
	dns.Set("only6.test", testutil.DNSEntry{AAAA: []net.IP{loop6}})
	ln4, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln4.Close()
	ln6, err := gatenet.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Logf("no ::1 here (%v): the tcp6 case is skipped", err)
	} else {
		defer ln6.Close()
	}
	port := func(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }
	type obs struct {
		Err     string
		Queries []string
	}
	run := func(d contextDialer, network, address string) obs {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := d.DialContext(ctx, network, address)
		o := obs{Queries: dns.Queries()}
		if err != nil {
			o.Err = fmt.Sprintf("%T %v", err.(*net.OpError).Err, err)
		} else {
			c.Close()
		}
		return o
	}
	type dialCase struct{ network, address string }
	cases := []dialCase{
		{"tcp4", fmt.Sprintf("slow6.test:%d", port(ln4))},
		{"tcp4", fmt.Sprintf("only6.test:%d", port(ln4))},
	}
	if ln6 != nil {
		cases = append(cases, dialCase{"tcp6", fmt.Sprintf("slow4.test:%d", port(ln6))})
	}
	for _, c := range cases {
		// A short Timeout: a dial that waited on the dropped query would fail.
		want := run(&net.Dialer{Resolver: dns.Resolver(), Timeout: 3 * time.Second}, c.network, c.address)
		got := run(&gatenet.Dialer{Resolver: dns.Resolver(), Timeout: 3 * time.Second}, c.network, c.address)
		require.Equal(t, want, got, "%s %s", c.network, c.address)
		require.Len(t, got.Queries, 1, "one family's query only")
	}
}

// TestDialHTTPTraceConnect: a dial reports httptrace's ConnectStart and
// ConnectDone, as net's does, refused or not.
func TestDialHTTPTraceConnect(t *testing.T) {
	testutil.CheckLeaks(t)
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	closed, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	refused := closed.Addr().String()
	closed.Close()
	events := func(d contextDialer, address string) []string {
		var got []string
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			ConnectStart: func(network, addr string) { got = append(got, "start "+network+" "+addr) },
			ConnectDone: func(network, addr string, err error) {
				got = append(got, fmt.Sprintf("done %s %s %v", network, addr, err))
			},
		})
		if c, err := d.DialContext(ctx, "tcp", address); err == nil {
			c.Close()
		}
		return got
	}
	for _, address := range []string{ln.Addr().String(), refused} {
		want := events(&net.Dialer{}, address)
		require.Len(t, want, 2)
		require.Equal(t, want, events(&gatenet.Dialer{}, address))
	}
}

// TestDialHTTPTraceResolve: while a dial resolves its name, the
// resolver's own connections to the DNS server are not reported as the
// dial's connects (net shadows ConnectStart and ConnectDone then), and
// DNSStart and DNSDone still are: the events equal net's, in order.
func TestDialHTTPTraceResolve(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	dns := testutil.NewFakeDNS(t)
	dns.Set("traced.test", testutil.DNSEntry{A: []net.IP{net.IPv4(127, 0, 0, 1)}})
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	address := fmt.Sprintf("traced.test:%d", ln.Addr().(*net.TCPAddr).Port)
	events := func(d contextDialer) []string {
		var got []string
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			DNSStart:     func(i httptrace.DNSStartInfo) { got = append(got, "dns start "+i.Host) },
			DNSDone:      func(i httptrace.DNSDoneInfo) { got = append(got, fmt.Sprintf("dns done %v %v", i.Addrs, i.Err)) },
			ConnectStart: func(network, addr string) { got = append(got, "start "+network+" "+addr) },
			ConnectDone: func(network, addr string, err error) {
				got = append(got, fmt.Sprintf("done %s %s %v", network, addr, err))
			},
		})
		c, err := d.DialContext(ctx, "tcp4", address)
		require.NoError(t, err)
		c.Close()
		return got
	}
	want := events(&net.Dialer{Resolver: dns.Resolver()})
	require.Len(t, want, 4, "DNS start and done, one connect's start and done: %q", want)
	require.Equal(t, want, events(&gatenet.Dialer{Resolver: dns.Resolver()}))
}

// TestDialCancelChannel: Dialer.Cancel, deprecated but still net's, ends
// a dial stuck in its lookup, with net's error.
func TestDialCancelChannel(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	dns := testutil.NewFakeDNS(t)
	dns.Set("hang.test", testutil.DNSEntry{DropA: true, DropAAAA: true})
	dial := func(d contextDialer) error {
		start := time.Now()
		_, err := d.DialContext(context.Background(), "tcp", "hang.test:80")
		t.Logf("%T: %v after %v", d, err, time.Since(start))
		return err
	}
	cancelAfter := func() <-chan struct{} {
		ch := make(chan struct{})
		time.AfterFunc(30*time.Millisecond, func() { close(ch) })
		return ch
	}
	//lint:ignore SA1019 net's deprecated Cancel is what gatenet's mirrors: the comparison
	want := dial(&net.Dialer{Resolver: dns.Resolver(), Cancel: cancelAfter()})
	got := dial(&gatenet.Dialer{Resolver: dns.Resolver(), Cancel: cancelAfter()})
	require.ErrorIs(t, want, context.Canceled)
	require.ErrorIs(t, got, context.Canceled)
	require.Equal(t, want.Error(), got.Error())
	var dnsErr *net.DNSError
	require.True(t, errors.As(got, &dnsErr), "%T", errors.Unwrap(got))
	_ = gatenet.Dialer{DualStack: true} // compiles, as net.Dialer's literal does
}

// TestDialCancelChannelClosed: a Cancel channel closed before the dial
// ends every dial, even one to a loopback listener whose connect
// completes at once. Both libraries watched the channel from a goroutine,
// which a loopback connect can outrun: 1 of 200 such dials connected with
// net, 193 of 200 with gatenet.
func TestDialCancelChannelClosed(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	closed := make(chan struct{})
	close(closed)
	for range 50 {
		c, err := (&gatenet.Dialer{Cancel: closed}).DialContext(context.Background(), "tcp", ln.Addr().String())
		if c != nil {
			c.Close()
		}
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, "dial tcp "+ln.Addr().String()+": operation was canceled", err.Error())
	}
}
