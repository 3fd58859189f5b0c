//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary be its own child: the parent re-executes
// os.Executable() with -child, as the command does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-child" {
		if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString("quicbench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const smokeSize = 8 << 20

// TestSmoke runs one round of 8 MiB over each socket kind through the
// parent and its children (the server checks every byte's value and the
// count), with the debug-log children, and checks the report and the
// JSON.
func TestSmoke(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "quicbench.json")
	var out, errOut bytes.Buffer
	args := []string{"-rounds", "1", "-size", "8388608", "-probe", "1048576", "-json", jsonFile}
	start := time.Now()
	if err := run(args, &out, &errOut); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	t.Logf("%v:\n%s\nstderr:\n%s", time.Since(start), out.String(), errOut.String())

	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^quic-go bulk gatenet/net \d+\.\d\d$`).MatchString(last) {
		t.Errorf("last line %q", last)
	}
	for _, m := range metrics {
		if !strings.Contains(out.String(), "| "+m.name) {
			t.Errorf("no row for %s", m.name)
		}
	}
	rep := readReport(t, jsonFile)
	if len(rep.Results) != len(connNames) {
		t.Fatalf("%d results in the JSON, want %d", len(rep.Results), len(connNames))
	}
	for i, r := range rep.Results {
		if r.Conn != connNames[i] || r.Size != smokeSize {
			t.Errorf("result %d: %s of %d bytes", i, r.Conn, r.Size)
		}
		// The measured part starts at the read that ends the warm-up.
		if most := int64(smokeSize - warmFor(smokeSize)); r.Bytes > most || r.Bytes < most-writeSize {
			t.Errorf("%s: %d bytes measured, want %d to %d", r.Conn, r.Bytes, most-writeSize, most)
		}
		// A datagram carries less than 64 KiB.
		if r.Client.Send == 0 || r.Server.Recv == 0 || r.Client.SendDgram < r.Bytes/(64<<10) {
			t.Errorf("%s: counts %+v %+v", r.Conn, r.Client, r.Server)
		}
		for _, o := range []sideOpts{r.ServerOpts, r.ClientOpts} {
			if !o.OOB || !o.SocketOOB || o.Batch == "none" || o.RcvBuf <= 0 || o.SndBuf <= 0 {
				t.Errorf("%s: options %+v", r.Conn, o)
			}
		}
	}
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	for _, r := range rep.Rows[:3] {
		for kind, s := range r.Stats {
			if !ok(s.Med) {
				t.Errorf("%s %s: %v", r.Metric, kind, s)
			}
		}
		if !ok(r.GatenetVsNet.OfMedians) {
			t.Errorf("%s: ratios %v", r.Metric, r.GatenetVsNet)
		}
	}
	if !ok(rep.Headline) {
		t.Errorf("headline %v", rep.Headline)
	}
	for _, kind := range connNames {
		if p := rep.Probe[kind]; len(p.Server) == 0 || len(p.Client) == 0 {
			t.Errorf("%s: quic-go logged nothing about the sockets: %+v", kind, p)
		}
	}
}

// fakeBatch is a socket with ReadBatch.
type fakeBatch struct{ *net.UDPConn }

func (fakeBatch) ReadBatch(ms []ipv4.Message, flags int) (int, error) { return 0, nil }

// TestWrap checks that each wrapper keeps what quic-go looks for.
func TestWrap(t *testing.T) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n counters
	w := wrap(c, &n)
	if _, ok := w.(*countingConn); !ok {
		t.Errorf("net.UDPConn wrapped as %T", w)
	}
	if _, ok := w.(batchReader); ok {
		t.Error("the wrapper of a socket without ReadBatch has ReadBatch")
	}
	if _, ok := w.(net.Conn); !ok {
		t.Error("the wrapper is not a net.Conn")
	}
	if _, ok := w.(quic.OOBCapablePacketConn); !ok {
		t.Error("the wrapper is not OOB-capable")
	}
	wb := wrap(fakeBatch{c}, &n)
	if _, ok := wb.(batchReader); !ok {
		t.Errorf("a socket with ReadBatch wrapped as %T, without it", wb)
	}
	if _, ok := wb.(quic.OOBCapablePacketConn); !ok {
		t.Error("the batch wrapper is not OOB-capable")
	}

	// A RawConn read counts each attempt.
	rc, err := w.(*countingConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Read(func(uintptr) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(uintptr) {}); err != nil {
		t.Fatal(err)
	}
	if got := n.snapshot(); got.Recv != 1 || got.Send != 0 {
		t.Errorf("after one RawConn read and a Control: %+v", got)
	}
}

// TestParseSendOOB reads the control messages quic-go sends with.
func TestParseSendOOB(t *testing.T) {
	cmsg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, unix.CmsgSpace(len(data)))
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		h.Level, h.Type = level, typ
		h.SetLen(unix.CmsgLen(len(data)))
		copy(b[unix.CmsgSpace(0):], data)
		return b
	}
	seg := []byte{0, 0}
	*(*uint16)(unsafe.Pointer(&seg[0])) = 1252
	oob := append(cmsg(unix.IPPROTO_UDP, unix.UDP_SEGMENT, seg), cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0x2})...)
	if s, ecn := parseSendOOB(oob); s != 1252 || !ecn {
		t.Errorf("GSO and ECT(0): %d, %v", s, ecn)
	}
	if s, ecn := parseSendOOB(cmsg(unix.IPPROTO_IP, unix.IP_TOS, []byte{0})); s != 0 || ecn {
		t.Errorf("Not-ECT: %d, %v", s, ecn)
	}
	if s, ecn := parseSendOOB(nil); s != 0 || ecn {
		t.Errorf("none: %d, %v", s, ecn)
	}
}

func TestParseProbe(t *testing.T) {
	log := strings.Join([]string{
		markServer,
		"2026/01/02 03:04:05 Conn has receive buffer of 7168 kiB (wanted: at least 7168 kiB)",
		"2026/01/02 03:04:05 Listening for udp4 connections on 127.0.0.1:1",
		markClient,
		"PacketConn is not a net.UDPConn. Disabling optimizations possible on UDP connections.",
		markTransfer,
		"client -> Sending packet 3 (1252 bytes) for connection x, 1-RTT (ECN: ECT(0))",
		"\t-> &wire.AckFrame{ECT0: 1}",
		"server ECN capability confirmed.",
		markDone,
		"Activating reading of ECN bits for IPv4.",
	}, "\n")
	p := parseProbe(log)
	if len(p.Server) != 1 || !strings.HasPrefix(p.Server[0], "Conn has receive buffer") {
		t.Errorf("server: %q", p.Server)
	}
	if len(p.Client) != 1 || !isDisabling(p.Client[0]) {
		t.Errorf("client: %q", p.Client)
	}
	if len(p.Connection) != 1 || p.Connection[0] != "server ECN capability confirmed." {
		t.Errorf("connection: %q", p.Connection)
	}
}

func TestReadPerf(t *testing.T) {
	name := filepath.Join(t.TempDir(), "perf.csv")
	csv := "# started on Mon Jan  1 00:00:00 2026\n\n" +
		"1234,,raw_syscalls:sys_enter,1000,100.00,,\n" +
		"56,,syscalls:sys_enter_recvmmsg,1000,100.00,,\n" +
		"<not counted>,,syscalls:sys_enter_recvmsg,0,0.00,,\n"
	if err := os.WriteFile(name, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := readPerf(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 || p[perfAll] != 1234 || p["syscalls:sys_enter_recvmmsg"] != 56 {
		t.Errorf("%v", p)
	}
}

// TestPerfSmoke runs one round of 4 MiB per socket kind under perf stat,
// where perf can count system calls.
func TestPerfSmoke(t *testing.T) {
	if _, err := perfEvents(); err != nil {
		t.Skip(err)
	}
	jsonFile := filepath.Join(t.TempDir(), "quicbench.json")
	var out, errOut bytes.Buffer
	if err := run([]string{"-rounds", "1", "-size", "4194304", "-probe", "0", "-perf", "-json", jsonFile}, &out, &errOut); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "| perf: all syscalls/MB") {
		t.Errorf("no perf rows:\n%s", out.String())
	}
	rep := readReport(t, jsonFile)
	for _, r := range rep.Results {
		if r.Perf[perfAll] <= 0 {
			t.Errorf("%s: perf counted %v", r.Conn, r.Perf)
		}
	}
}

// readReport reads the -json file a run wrote.
func readReport(t *testing.T, path string) report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
