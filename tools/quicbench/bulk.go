//go:build linux

package main

// One round's work, in the child: a quic-go server and client in this
// process on two UDP sockets of one kind, the client writing -size bytes
// on one stream, the server reading and checking them.

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/tlstest"
)

// The socket kinds, in the order each round runs them.
const (
	connNet     = "net"     // *net.UDPConn from net.ListenUDP
	connGatenet = "gatenet" // *gatenet.UDPConn from gatenet.ListenUDP
)

var connNames = []string{connNet, connGatenet}

const (
	alpn      = "quicbench"
	writeSize = 64 << 10 // the client's writes, and the server's read buffer
	warmBytes = 16 << 20 // read before the measured part starts (at most a quarter of -size)
	minSize   = 1 << 20
)

// What the child writes on stderr between quic-go's set-up steps, so that
// the parent can tell which socket quic-go's log lines are about.
const (
	markServer   = "quicbench: -- server socket (quic.Listen)"
	markClient   = "quicbench: -- client socket (quic.Dial)"
	markTransfer = "quicbench: -- transfer"
	markDone     = "quicbench: -- done"
)

// listenUDP opens a UDP socket of the kind on 127.0.0.1, any port.
func listenUDP(kind string) (udpSocket, error) {
	laddr := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}
	switch kind {
	case connNet:
		c, err := net.ListenUDP("udp4", laddr)
		if err != nil {
			return nil, err
		}
		return c, nil
	case connGatenet:
		c, err := gatenet.ListenUDP("udp4", laddr)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	return nil, fmt.Errorf("unknown socket kind %q (%s or %s)", kind, connNet, connGatenet)
}

// warmFor is the warm-up of a transfer of size bytes: 16 MiB, at most a
// quarter of it.
func warmFor(size int64) int64 { return min(warmBytes, size/4) }

// pattern is the stream's content: byte i is byte(i*7). It repeats every
// 256 bytes, so every 64 KiB write is pattern[:n] and a read at stream
// offset o of n bytes must equal pattern[o%256:][:n].
var pattern = func() []byte {
	b := make([]byte, writeSize+256)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}()

// sideOpts is what quic-go enables on one side's socket, determined
// directly (not from its log): the interfaces of the wrapper it was
// given (and of the socket underneath, which must agree), GSO by
// quic-go's own test (getsockopt UDP_SEGMENT through Control, on Linux 5
// or later, unless QUIC_GO_DISABLE_GSO), ECN by its own (Linux 5 or later,
// unless QUIC_GO_DISABLE_ECN, on an OOB-capable conn), and the buffer
// sizes the kernel reports once quic-go has set them.
type sideOpts struct {
	OOB       bool   `json:"oob"`        // the wrapper is a quic.OOBCapablePacketConn
	SocketOOB bool   `json:"socket_oob"` // and the socket
	Batch     string `json:"batch_read"` // "ReadBatch" (the socket's own), "ipv4.PacketConn" (recvmmsg through SyscallConn), or "none"
	GSO       bool   `json:"gso"`
	ECN       bool   `json:"ecn"`
	RcvBuf    int    `json:"rcvbuf"` // SO_RCVBUF read back, bytes
	SndBuf    int    `json:"sndbuf"` // SO_SNDBUF read back, bytes
}

func inspect(sock udpSocket, w net.PacketConn) (sideOpts, error) {
	var o sideOpts
	_, o.OOB = w.(quic.OOBCapablePacketConn)
	_, o.SocketOOB = any(sock).(quic.OOBCapablePacketConn)
	_, wBatch := w.(batchReader)
	_, sBatch := any(sock).(batchReader)
	_, isConn := w.(net.Conn)
	switch {
	case !o.OOB:
		o.Batch = "none"
	case wBatch:
		o.Batch = "ReadBatch"
	case isConn:
		o.Batch = "ipv4.PacketConn"
	default:
		o.Batch = "none"
	}
	if wBatch != sBatch {
		return o, fmt.Errorf("the wrapper has ReadBatch %v, its socket %v", wBatch, sBatch)
	}
	rc, err := sock.SyscallConn()
	if err != nil {
		return o, err
	}
	var gsoErr, rcvErr, sndErr error
	if err := rc.Control(func(fd uintptr) {
		_, gsoErr = unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		o.RcvBuf, rcvErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF)
		o.SndBuf, sndErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF)
	}); err != nil {
		return o, err
	}
	if err := errors.Join(rcvErr, sndErr); err != nil {
		return o, err
	}
	kernel := kernelMajor()
	o.GSO = o.OOB && kernel >= 5 && gsoErr == nil && !envTrue("QUIC_GO_DISABLE_GSO")
	o.ECN = o.OOB && kernel >= 5 && !envTrue("QUIC_GO_DISABLE_ECN")
	return o, nil
}

func envTrue(name string) bool {
	b, err := strconv.ParseBool(os.Getenv(name))
	return err == nil && b
}

// kernelMajor is the running kernel's major version, as quic-go reads it.
func kernelMajor() int {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return 0
	}
	v := 0
	for _, c := range u.Release {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// usage is the process's CPU time and context switches.
type usage struct {
	cpuNanos, volCtx, involCtx int64
}

func readUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{ru.Utime.Nano() + ru.Stime.Nano(), ru.Nvcsw, ru.Nivcsw}
}

// mark is the clocks and counts at one point of the transfer.
type mark struct {
	t        time.Time
	u        usage
	srv, cli sideCounts
	read     int64 // stream bytes the server had read
}

func takeMark(srv, cli *counters, read int64) mark {
	return mark{u: readUsage(), srv: srv.snapshot(), cli: cli.snapshot(), read: read, t: time.Now()}
}

// bulk moves size bytes over one stream on two sockets of the kind and
// returns the measured part. Its set-up steps are marked on logw.
func bulk(kind string, size int64, limit time.Duration, logw io.Writer) (result, error) {
	ca, err := tlstest.NewCA()
	if err != nil {
		return result{}, err
	}
	cert, err := ca.Leaf(tlstest.ECDSA)
	if err != nil {
		return result{}, err
	}
	srvTLS := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}}
	cliTLS := ca.ClientConfig()
	cliTLS.ServerName, cliTLS.NextProtos = "localhost", []string{alpn}
	conf := &quic.Config{} // quic-go's defaults

	srvSock, err := listenUDP(kind)
	if err != nil {
		return result{}, err
	}
	defer srvSock.Close()
	cliSock, err := listenUDP(kind)
	if err != nil {
		return result{}, err
	}
	defer cliSock.Close()
	var srvN, cliN counters
	srv, cli := wrap(srvSock, &srvN), wrap(cliSock, &cliN)

	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	deadline, _ := ctx.Deadline()

	fmt.Fprintln(logw, markServer)
	ln, err := quic.Listen(srv, srvTLS, conf)
	if err != nil {
		return result{}, err
	}
	defer ln.Close()
	fmt.Fprintln(logw, markClient)
	type served struct {
		from, to mark
		err      error
	}
	done := make(chan served, 1)
	go func() {
		from, to, err := serve(ctx, ln, size, deadline, &srvN, &cliN)
		done <- served{from, to, err}
	}()
	conn, err := quic.Dial(ctx, cli, srv.LocalAddr(), cliTLS, conf)
	if err != nil {
		return result{}, err
	}
	defer conn.CloseWithError(0, "")
	fmt.Fprintln(logw, markTransfer)

	var r result
	if r.ServerOpts, err = inspect(srvSock, srv); err != nil {
		return result{}, fmt.Errorf("server socket: %w", err)
	}
	if r.ClientOpts, err = inspect(cliSock, cli); err != nil {
		return result{}, fmt.Errorf("client socket: %w", err)
	}

	werr := write(ctx, conn, size, deadline)
	var s served
	select {
	case s = <-done:
	case <-ctx.Done():
		s.err = ctx.Err()
	}
	if err := errors.Join(werr, s.err); err != nil {
		return result{}, err
	}
	fmt.Fprintln(logw, markDone)
	r.Size = size
	r.Bytes = s.to.read - s.from.read
	r.Seconds = s.to.t.Sub(s.from.t).Seconds()
	r.CPUNanos = s.to.u.cpuNanos - s.from.u.cpuNanos
	r.VolCtx = s.to.u.volCtx - s.from.u.volCtx
	r.InvolCtx = s.to.u.involCtx - s.from.u.involCtx
	r.Server = s.to.srv.sub(s.from.srv)
	r.Client = s.to.cli.sub(s.from.cli)
	return r, nil
}

// write is the client: one stream, size bytes in 64 KiB writes, closed.
func write(ctx context.Context, conn *quic.Conn, size int64, deadline time.Time) error {
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	str.SetWriteDeadline(deadline)
	for left := size; left > 0; {
		n := min(left, writeSize)
		if _, err := str.Write(pattern[:n]); err != nil {
			return fmt.Errorf("client write: %w", err)
		}
		left -= n
	}
	return str.Close()
}

// serve is the server: it accepts the connection and its stream, reads
// and checks every byte, and returns the marks at the end of the warm-up
// (after its first read if there is none) and at the last byte.
func serve(ctx context.Context, ln *quic.Listener, size int64, deadline time.Time, srvN, cliN *counters) (from, to mark, err error) {
	conn, err := ln.Accept(ctx)
	if err != nil {
		return from, to, err
	}
	str, err := conn.AcceptStream(ctx)
	if err != nil {
		return from, to, err
	}
	str.SetReadDeadline(deadline)
	warm := max(warmFor(size), 1)
	buf := make([]byte, writeSize)
	var got int64
	started := false
	for {
		n, err := str.Read(buf)
		if n > 0 {
			if got+int64(n) > size {
				return from, to, fmt.Errorf("server read %d bytes, more than the %d sent", got+int64(n), size)
			}
			if !bytes.Equal(buf[:n], pattern[got%256:][:n]) {
				return from, to, fmt.Errorf("server read wrong bytes at stream offset %d..%d", got, got+int64(n))
			}
			got += int64(n)
			switch {
			case got == size && started:
				to = takeMark(srvN, cliN, got)
			case !started && got >= warm:
				started = true
				from = takeMark(srvN, cliN, got)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return from, to, fmt.Errorf("server read at offset %d: %w", got, err)
		}
	}
	if got != size {
		return from, to, fmt.Errorf("server read %d bytes, want %d", got, size)
	}
	if to.t.IsZero() {
		return from, to, fmt.Errorf("nothing measured: the first %d bytes came in one read", got)
	}
	return from, to, nil
}
