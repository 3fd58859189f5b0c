//go:build linux

package quicsynctest

// quic-go on the real clock over gatenet's UDPConn: an HTTP/3 round trip,
// and every optimisation quic-go probes for found on the conn, faults
// attached or not.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/tlstest"
)

func listenLoopback(t *testing.T) *gatenet.UDPConn {
	t.Helper()
	c, err := gatenet.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestHTTP3RoundTrip serves HTTP/3 (quic-go's http3) on one gatenet
// socket and requests it over another: a GET, and a 4 MiB POST whose
// digest comes back.
func TestHTTP3RoundTrip(t *testing.T) {
	srvSock, cliSock := listenLoopback(t), listenLoopback(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.Proto)
	})
	mux.HandleFunc("/digest", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, err := io.Copy(h, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
	})
	srvTLS := tlstest.DefaultServerConfig().Clone()
	srvTLS.NextProtos = []string{http3.NextProtoH3}
	srv := &http3.Server{Handler: mux, TLSConfig: srvTLS}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvSock) }()
	defer func() {
		srv.Close()
		if err := <-served; err != nil && err != http.ErrServerClosed && !strings.Contains(err.Error(), "closed") {
			t.Errorf("Serve: %v", err)
		}
	}()

	cliTr := &quic.Transport{Conn: cliSock}
	defer cliTr.Close()
	rt := &http3.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		Dial: func(ctx context.Context, addr string, tlsConf *tls.Config, conf *quic.Config) (*quic.Conn, error) {
			ua, err := net.ResolveUDPAddr("udp", addr)
			if err != nil {
				return nil, err
			}
			return cliTr.DialEarly(ctx, ua, tlsConf, conf)
		},
	}
	defer rt.Close()
	client := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	base := "https://" + srvSock.LocalAddr().String()

	resp, err := client.Get(base + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != "hello HTTP/3.0" {
		t.Fatalf("GET: %v %d %q", err, resp.StatusCode, body)
	}

	payload := bytes.Repeat([]byte("gatenet-h3-"), 4<<20/11)
	resp, err = client.Post(base+"/digest", "application/octet-stream", bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := fmt.Sprintf("%d %x", len(payload), sha256.Sum256(payload)); err != nil || string(body) != want {
		t.Fatalf("POST: %v %q, want %q", err, body, want)
	}
	if gro := sockoptUDP(t, srvSock, unix.UDP_GRO); gro != 1 {
		t.Errorf("server socket UDP_GRO = %d after quic-go's reads, want 1", gro)
	}
}

func sockoptUDP(t *testing.T, c syscall.Conn, opt int) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, opt) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatalf("getsockopt(%d): %v", opt, gerr)
	}
	return v
}

// TestQUICOptimisations checks each interface quic-go's sys_conn*.go
// probes for on a gatenet UDPConn, with and without faults attached (the
// fault layer sits on the descriptor, not in a wrapper, so nothing is
// hidden), then runs a transfer in a child process with quic-go's debug
// log on and reads what it enabled. quic-go's own tests of these
// (sys_conn_oob_test.go) build its unexported oobConn, so cannot run
// from outside its repository; these are their checks from outside.
func TestQUICOptimisations(t *testing.T) {
	if os.Getenv("QUICSYNCTEST_CHILD") == "transfer" {
		childTransfer(t)
		return
	}
	for _, faulted := range []bool{false, true} {
		c := listenLoopback(t)
		if faulted {
			f, err := faults.Parse("latency=1ms")
			if err != nil {
				t.Fatal(err)
			}
			if err := gatenet.InjectFaults(c, f); err != nil {
				t.Fatal(err)
			}
		}
		var pc net.PacketConn = c
		if _, ok := pc.(quic.OOBCapablePacketConn); !ok {
			t.Errorf("faults %v: not a quic.OOBCapablePacketConn", faulted)
		}
		if _, ok := pc.(interface {
			ReadBatch([]ipv4.Message, int) (int, error)
		}); !ok {
			t.Errorf("faults %v: no ReadBatch", faulted)
		}
		if _, ok := pc.LocalAddr().(*net.UDPAddr); !ok {
			t.Errorf("faults %v: LocalAddr is %T, so quic-go sets no DF bit", faulted, pc.LocalAddr())
		}
		sockoptUDP(t, c, unix.UDP_SEGMENT) // GSO: quic-go's isGSOEnabled
		rc, _ := c.SyscallConn()
		var tosErr, tclassErr error
		rc.Control(func(fd uintptr) {
			tosErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
			tclassErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1)
		})
		if tosErr != nil && tclassErr != nil {
			t.Errorf("faults %v: ECN: %v, %v", faulted, tosErr, tclassErr)
		}
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestQUICOptimisations$", "-test.v")
	cmd.Env = append(os.Environ(), "QUICSYNCTEST_CHILD=transfer", "QUIC_GO_LOG_LEVEL=DEBUG")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	log := string(out)
	for _, want := range []string{"Setting DF for IPv4", "Activating reading of ECN bits"} {
		if strings.Count(log, want) < 2 {
			t.Errorf("quic-go did not log %q for both ends:\n%s", want, log)
		}
	}
	for _, bad := range []string{"Disabling optimizations", "UDP-Buffer-Sizes", "GSO failed"} {
		if strings.Contains(log, bad) {
			t.Errorf("quic-go logged %q:\n%s", bad, log)
		}
	}
}

// childTransfer moves 8 MiB over one quic-go stream between two gatenet
// sockets, the GSO and GRO paths both taken.
func childTransfer(t *testing.T) {
	srvSock, cliSock := listenLoopback(t), listenLoopback(t)
	srvTLS := tlstest.DefaultServerConfig().Clone()
	srvTLS.NextProtos = []string{alpn}
	srvTr := &quic.Transport{Conn: srvSock}
	defer srvTr.Close()
	cliTr := &quic.Transport{Conn: cliSock}
	defer cliTr.Close()
	ln, err := srvTr.Listen(srvTLS, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const size = 8 << 20
	got := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept(t.Context())
		if err != nil {
			got <- -1
			return
		}
		defer conn.CloseWithError(0, "")
		str, err := conn.AcceptStream(t.Context())
		if err != nil {
			got <- -1
			return
		}
		n, _ := io.Copy(io.Discard, str)
		got <- n
	}()
	conn, err := cliTr.Dial(t.Context(), srvSock.LocalAddr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseWithError(0, "")
	str, err := conn.OpenStreamSync(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	str.Close()
	if n := <-got; n != size {
		t.Fatalf("server read %d bytes, want %d", n, size)
	}
	if gro := sockoptUDP(t, srvSock, unix.UDP_GRO); gro != 1 {
		t.Errorf("UDP_GRO = %d on the receiving socket, want 1", gro)
	}
}
