//go:build linux

package tlstest_test

// Load and stream behaviour: 200 concurrent handshakes against one server,
// 64 MiB each way at once over one tls.Conn, CloseWrite and close_notify
// side by side with net, and nettest.TestConn over tls.Client/tls.Server.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/nettest"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/tlstest"
)

func TestConcurrentHandshakes(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	const clients = 200
	srv := tlstest.NewServer(t, nil, nil) // echo
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			<-start
			errs <- echoOnce(t, srv, fmt.Sprintf("client %d\n", i))
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	srv.Close()
	if ok, failed := srv.Handshakes(); ok != clients || failed != 0 {
		t.Errorf("server handshakes: %d ok, %d failed; want %d and 0", ok, failed, clients)
	}
}

// pattern is a stream of pseudo-random bytes made of chunks of a random
// block at varying offsets, so that a lost, repeated or reordered chunk
// changes the hash.
type pattern struct {
	block []byte
	chunk int
}

func newPattern(seed uint64, chunk int) *pattern {
	block := make([]byte, 1<<20+chunk)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)})
	r.Read(block)
	return &pattern{block, chunk}
}

func (p *pattern) piece(i int) []byte {
	off := (i * 7919) % (len(p.block) - p.chunk)
	return p.block[off : off+p.chunk]
}

// TestBulk64MiB: 64 MiB each way at the same time over one tls.Conn pair,
// each direction verified by SHA-256.
func TestBulk64MiB(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	const total = 64 << 20
	const chunk = 64 << 10
	c, s := tlstest.Pair(t, nil, nil)
	c.SetDeadline(time.Now().Add(4 * time.Minute)) // hang detectors
	s.SetDeadline(time.Now().Add(4 * time.Minute))

	type result struct {
		what string
		sum  [32]byte
		n    int64
		err  error
	}
	results := make(chan result, 4)
	send := func(what string, conn *tls.Conn, seed uint64) {
		p := newPattern(seed, chunk)
		h := sha256.New()
		var n int64
		for i := 0; n < total; i++ {
			b := p.piece(i)
			h.Write(b)
			m, err := conn.Write(b)
			n += int64(m)
			if err != nil {
				results <- result{what, [32]byte{}, n, err}
				return
			}
		}
		results <- result{what, [32]byte(h.Sum(nil)), n, nil}
	}
	receive := func(what string, conn *tls.Conn) {
		h := sha256.New()
		n, err := io.CopyN(h, conn, total)
		results <- result{what, [32]byte(h.Sum(nil)), n, err}
	}
	go send("client sent", c, 1)
	go send("server sent", s, 2)
	go receive("server received", s)
	go receive("client received", c)
	got := make(map[string]result)
	for range 4 {
		r := recv(t, results, "transfer result")
		if r.err != nil || r.n != total {
			t.Errorf("%s %d bytes: %v", r.what, r.n, r.err)
		}
		got[r.what] = r
	}
	if got["client sent"].sum != got["server received"].sum {
		t.Error("client to server: the SHA-256 of what arrived differs from what was sent")
	}
	if got["server sent"].sum != got["client received"].sum {
		t.Error("server to client: the SHA-256 of what arrived differs from what was sent")
	}
	if got["client sent"].sum == got["server sent"].sum {
		t.Error("both directions sent the same stream: the test is not testing")
	}
}

// readAll reads conn to its end and describes what came and how it ended.
func readAll(conn *tls.Conn) string {
	conn.SetReadDeadline(time.Now().Add(time.Minute)) // a hang detector
	var got bytes.Buffer
	buf := make([]byte, 64)
	for {
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			return fmt.Sprintf("%q then %s", got.String(), describeErr(err))
		}
	}
}

// closeWriteScenarios are run on net and on gatenet; each returns the
// sequence of what it observed.
var closeWriteScenarios = map[string]func(t *testing.T, c, s *tls.Conn) []string{
	// The client's CloseWrite sends close_notify: the server reads the
	// request and io.EOF, answers, and closes its side the same way.
	"close_notify": func(t *testing.T, c, s *tls.Conn) []string {
		var obs []string
		note := func(format string, args ...any) { obs = append(obs, fmt.Sprintf(format, args...)) }
		_, err := c.Write([]byte("request"))
		note("client write: %s", describeErr(err))
		note("client CloseWrite: %s", describeErr(c.CloseWrite()))
		note("server reads: %s", readAll(s))
		note("server reads again: %s", readAll(s))
		_, err = c.Write([]byte("more"))
		note("client write after CloseWrite: %s", describeErr(err))
		_, err = s.Write([]byte("response"))
		note("server write after EOF: %s", describeErr(err))
		note("server CloseWrite: %s", describeErr(s.CloseWrite()))
		note("client reads: %s", readAll(c))
		_, err = s.Write([]byte("late"))
		note("server write after CloseWrite: %s", describeErr(err))
		note("client CloseWrite again: %s", describeErr(c.CloseWrite()))
		note("client Close: %s", describeErr(c.Close()))
		note("server Close: %s", describeErr(s.Close()))
		note("server Close again: %s", describeErr(s.Close()))
		return obs
	},
	// A bare FIN from the socket's CloseWrite, no close_notify: at a record
	// boundary crypto/tls reads it as io.EOF too, and the other direction
	// still works.
	"FIN without close_notify": func(t *testing.T, c, s *tls.Conn) []string {
		var obs []string
		note := func(format string, args ...any) { obs = append(obs, fmt.Sprintf(format, args...)) }
		_, err := c.Write([]byte("request"))
		note("client write: %s", describeErr(err))
		cw, ok := c.NetConn().(interface{ CloseWrite() error })
		require.True(t, ok, "%T has no CloseWrite", c.NetConn())
		note("client socket CloseWrite: %s", describeErr(cw.CloseWrite()))
		note("server reads: %s", readAll(s))
		_, err = s.Write([]byte("response"))
		note("server write: %s", describeErr(err))
		buf := make([]byte, len("response"))
		c.SetReadDeadline(time.Now().Add(time.Minute))
		n, err := io.ReadFull(c, buf)
		note("client reads %q: %s", buf[:n], describeErr(err))
		note("server Close: %s", describeErr(s.Close()))
		note("client reads: %s", readAll(c))
		_, err = c.Write([]byte("more"))
		note("client tls write after socket CloseWrite: %s", describeErr(err))
		return obs
	},
}

func TestCloseWriteParity(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	for _, network := range []string{"tcp", "unix"} {
		for _, name := range []string{"close_notify", "FIN without close_notify"} {
			for _, v := range versions {
				t.Run(network+"/"+name+"/"+versionName(v), func(t *testing.T) {
					stackParity(t, func(t *testing.T, st stack) []string {
						client := tlstest.DefaultClientConfig()
						client.MaxVersion = v
						c, s := tlsPairOn(t, st, network, nil, client)
						obs := closeWriteScenarios[name](t, c, s)
						t.Logf("%s:\n%s", st.name, strings.Join(obs, "\n"))
						return obs
					})
				})
			}
		}
	}
	// CloseWrite before the handshake is refused, on any transport.
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := tls.Client(a, tlstest.DefaultClientConfig())
	if err := c.CloseWrite(); err == nil || !strings.Contains(err.Error(), "before handshake complete") {
		t.Errorf("CloseWrite before the handshake: %v", err)
	}
}

// The nettest subtests crypto/tls cannot pass on any transport: each does a
// Write after one timed out, and "after a Write has timed out, the TLS
// state is corrupt and all future writes will return the same error"
// (tls.Conn.SetWriteDeadline). They fail over net too, after nettest's
// one-minute timer; TLSTEST_NETTEST_ALL=1 runs them on both stacks and
// checks that gatenet fails exactly where net does.
var nettestTLSBroken = []string{"PastTimeout", "FutureTimeout", "ConcurrentMethods"}

var nettestSubtests = []string{
	"BasicIO", "PingPong", "RacyRead", "RacyWrite", "ReadTimeout", "WriteTimeout",
	"PastTimeout", "PresentTimeout", "FutureTimeout", "CloseTimeout", "ConcurrentMethods",
}

// TestTLSNettest runs nettest.TestConn over tls.Client/tls.Server on
// gatenet (and on net, for reference) in a child process of this test
// binary, since the subtests crypto/tls cannot pass (nettestTLSBroken)
// must be left out with -test.run, which only a new process can do. Each
// subtest that runs must pass on both stacks, both ways round (the client
// as c1, and the server as c1).
func TestTLSNettest(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 15*time.Minute)
	if os.Getenv("TLSTEST_NETTEST_CHILD") != "" {
		t.Skip("in the child")
	}
	all := os.Getenv("TLSTEST_NETTEST_ALL") != ""
	run := nettestSubtests
	if !all {
		run = nil
		for _, s := range nettestSubtests {
			if !contains(nettestTLSBroken, s) {
				run = append(run, s)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run=^TestTLSNettestChild$/^(net|gatenet)$/^(client-c1|server-c1)$/^("+strings.Join(run, "|")+")$",
		"-test.v", "-test.count=1", "-test.timeout=14m")
	cmd.Env = append(os.Environ(), "TLSTEST_NETTEST_CHILD=1")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the child ran out of time:\n%s", out)
	}
	results := make(map[string]string) // stack/order/subtest → PASS or FAIL
	re := regexp.MustCompile(`--- (PASS|FAIL|SKIP): TestTLSNettestChild/(\w+)/(\w+-c1)/(\w+) `)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			results[m[2]+"/"+m[3]+"/"+m[4]] = m[1]
		}
	}
	failed := false
	for _, order := range []string{"client-c1", "server-c1"} {
		for _, sub := range run {
			netRes, gnRes := results["net/"+order+"/"+sub], results["gatenet/"+order+"/"+sub]
			want := "PASS"
			if contains(nettestTLSBroken, sub) {
				want = netRes // gatenet must match net where crypto/tls fails
			}
			if netRes == "" || gnRes == "" || gnRes != want || (!contains(nettestTLSBroken, sub) && netRes != "PASS") {
				t.Errorf("%s/%s: net %q, gatenet %q", order, sub, netRes, gnRes)
				failed = true
			}
		}
	}
	if err != nil && !all {
		t.Errorf("the child failed: %v", err)
		failed = true
	}
	if failed || testing.Verbose() {
		t.Logf("child output:\n%s", out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestTLSNettestChild is TestTLSNettest's child: nettest.TestConn over TLS
// on each stack.
func TestTLSNettestChild(t *testing.T) {
	if os.Getenv("TLSTEST_NETTEST_CHILD") == "" {
		t.Skip("run by TestTLSNettest in a child process")
	}
	testutil.CheckLeaks(t)
	for _, st := range stacks {
		t.Run(st.name, func(t *testing.T) {
			for _, serverFirst := range []bool{false, true} {
				name := map[bool]string{false: "client-c1", true: "server-c1"}[serverFirst]
				t.Run(name, func(t *testing.T) {
					testutil.CheckLeaks(t)
					nettest.TestConn(t, tlsNettestPipe(t, st, serverFirst))
				})
			}
		})
	}
}

// tlsNettestPipe is a nettest.MakePipe of a handshaken tls.Client and
// tls.Server over st's TCP on 127.0.0.1.
func tlsNettestPipe(t *testing.T, st stack, serverFirst bool) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ln, err := st.listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, nil, err
		}
		defer ln.Close()
		rc, rs, err := testutil.Connect(ln, func() (net.Conn, error) { return st.dial(ctx, "tcp", ln.Addr().String()) })
		if err != nil {
			return nil, nil, nil, err
		}
		cfg := tlstest.DefaultClientConfig()
		cfg.ServerName = "127.0.0.1"
		c, s, err := handshake(ctx, rc, rs, tlstest.DefaultServerConfig(), cfg)
		if err != nil {
			return nil, nil, nil, err
		}
		c1, c2 = c, s
		if serverFirst {
			c1, c2 = c2, c1
		}
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	}
}
