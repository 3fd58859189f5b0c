//go:build linux

package gatenet_test

// Side-by-side benchmarks of the zero-copy and batching paths (issue 5,
// "Benchmarks"): net and gatenet in one run, over loopback, both ends from
// the same library.
//
//   - FileToConn: io.Copy from a regular file to a TCP conn (sendfile(2)
//     on both: net through (*os.File).WriteTo, gatenet through
//     (*TCPConn).ReadFrom).
//   - Proxy: io.Copy between two conns of a proxy (splice(2) on both).
//   - UDPEcho512: a 512-byte datagram ping-pong.
//   - Writev64: 64 buffers of 64 B in one writev(2) (net.Buffers.WriteTo on
//     net, (*TCPConn).WriteBuffers on gatenet).
//
//	go test -run XXX -bench 'FileToConn|Proxy|UDPEcho512|Writev64' .

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
)

// discardReader is benchharness.Drain that also closes c once drained.
func discardReader(c net.Conn, bufSize int) <-chan benchharness.Drained {
	done := make(chan benchharness.Drained, 1)
	drained := benchharness.Drain(c, bufSize)
	go func() {
		r := <-drained
		c.Close()
		done <- r
	}()
	return done
}

// ---- FileToConn ----

const fileToConnSize = 64 << 20

// BenchmarkFileToConn: one iteration rewinds a 64 MiB regular file and
// io.Copies it to a TCP conn; a reader goroutine on the accepted end
// discards.
func BenchmarkFileToConn(b *testing.B) {
	path := filepath.Join(b.TempDir(), "payload")
	data := make([]byte, fileToConnSize)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatalf("writing the payload: %v", err)
	}
	data = nil
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchFileToConn(b, s, path) })
	}
}

func benchFileToConn(b *testing.B, s tcpStack, path string) {
	testutil.CheckLeaks(b)
	f, err := os.Open(path)
	if err != nil {
		b.Fatalf("open: %v", err)
	}
	defer f.Close()
	c, a := tcpPair(b, s)
	readDone := discardReader(a, 256<<10)

	b.SetBytes(fileToConnSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatalf("seek: %v", err)
		}
		n, err := io.Copy(c, f)
		if err != nil {
			b.Fatalf("copy: %v", err)
		}
		if n != fileToConnSize {
			b.Fatalf("copied %d bytes, want %d", n, fileToConnSize)
		}
	}
	if err := c.Close(); err != nil {
		b.Errorf("closing the writer: %v", err)
	}
	res := <-readDone
	b.StopTimer()
	if res.Err != nil {
		b.Errorf("reader: %v", res.Err)
	}
	if want := int64(b.N) * fileToConnSize; res.N != want {
		b.Errorf("reader got %d bytes, want %d", res.N, want)
	}
}

// ---- Proxy ----

const proxyChunk = 128 << 10

// BenchmarkProxy streams 128 KiB writes from a client through a proxy
// (io.Copy from the accepted conn to a conn dialled to the server, both of
// the same stack) to a server goroutine that discards them.
func BenchmarkProxy(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchProxy(b, s) })
	}
}

func benchProxy(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	client, proxyIn := tcpPair(b, s)
	proxyOut, server := tcpPair(b, s)

	readDone := discardReader(server, proxyChunk)
	type copyResult struct {
		n   int64
		err error
	}
	proxyDone := make(chan copyResult, 1)
	go func() {
		n, err := io.Copy(proxyOut, proxyIn)
		proxyIn.Close()
		proxyOut.Close() // the server reads EOF
		proxyDone <- copyResult{n, err}
	}()

	splices0 := gatenet.SpliceCalls()
	chunk := make([]byte, proxyChunk)
	b.SetBytes(proxyChunk)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := client.Write(chunk); err != nil {
			b.Fatalf("write: %v", err)
		}
	}
	if err := client.Close(); err != nil {
		b.Errorf("closing the client: %v", err)
	}
	res := <-readDone // the tail still in flight counts
	b.StopTimer()
	pres := <-proxyDone
	if s.name == "gatenet" && gatenet.SpliceCalls() == splices0 {
		b.Errorf("the proxy copied without splice(2)")
	}
	want := int64(b.N) * proxyChunk
	if pres.err != nil {
		b.Errorf("proxy: %v", pres.err)
	}
	if pres.n != want {
		b.Errorf("proxy copied %d bytes, want %d", pres.n, want)
	}
	if res.Err != nil {
		b.Errorf("server: %v", res.Err)
	}
	if res.N != want {
		b.Errorf("server got %d bytes, want %d", res.N, want)
	}
}

// ---- UDPEcho512 ----

const udpEchoSize = 512

// BenchmarkUDPEcho512: the loop sends a 512-byte datagram from one
// unconnected UDP socket to another, an echo goroutine sends it back, the
// loop reads it. One iteration is one round trip (two datagrams).
func BenchmarkUDPEcho512(b *testing.B) {
	for _, s := range []udpStack{udpNetStack, udpGatenetStack} {
		b.Run(s.Name, func(b *testing.B) { benchUDPEcho(b, s) })
	}
}

func benchUDPEcho(b *testing.B, s udpStack) {
	testutil.CheckLeaks(b)
	srv := udpListen(b, s, "udp4", "127.0.0.1:0")
	cli := udpListen(b, s, "udp4", "127.0.0.1:0")
	srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()

	echoDone := make(chan error, 1)
	go func() {
		buf := make([]byte, 2*udpEchoSize)
		for {
			n, from, err := srv.ReadFromUDPAddrPort(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					err = nil // the benchmark is over
				}
				echoDone <- err
				return
			}
			if _, err := srv.WriteToUDPAddrPort(buf[:n], from); err != nil {
				echoDone <- err
				return
			}
		}
	}()

	msg := make([]byte, udpEchoSize)
	for i := range msg {
		msg[i] = byte(i)
	}
	reply := make([]byte, 2*udpEchoSize)

	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos(b)
	for range b.N {
		if _, err := cli.WriteToUDPAddrPort(msg, srvAddr); err != nil {
			b.Fatalf("write: %v", err) // the cleanup's close ends the echo goroutine
		}
		n, from, err := cli.ReadFromUDPAddrPort(reply)
		if err != nil {
			b.Fatalf("read: %v", err)
		}
		if n != udpEchoSize || from != srvAddr {
			b.Fatalf("read %d bytes from %v, want %d from %v", n, from, udpEchoSize, srvAddr)
		}
	}
	cpu1 := cpuNanos(b)
	b.StopTimer()

	b.ReportMetric(2*float64(b.N)/b.Elapsed().Seconds(), "dgrams/s")
	b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/rt")

	if err := srv.Close(); err != nil {
		b.Errorf("closing the server: %v", err)
	}
	if err := <-echoDone; err != nil {
		b.Errorf("echo: %v", err)
	}
}

// ---- Writev64 ----

const (
	writevBufs = 64
	writevSize = 64
)

// BenchmarkWritev64: one iteration writes 64 buffers of 64 B with one
// gathered write: net.Buffers.WriteTo on a *net.TCPConn (writev inside
// net), (*gatenet.TCPConn).WriteBuffers on gatenet. A reader goroutine on
// the accepted end discards.
func BenchmarkWritev64(b *testing.B) {
	for _, s := range tcpStacks() {
		b.Run(s.name, func(b *testing.B) { benchWritev(b, s) })
	}
}

// buffersWriter is gatenet's TCPConn.WriteBuffers.
type buffersWriter interface {
	WriteBuffers(v *net.Buffers) (int64, error)
}

func benchWritev(b *testing.B, s tcpStack) {
	testutil.CheckLeaks(b)
	c, a := tcpPair(b, s)

	var write func(v *net.Buffers) (int64, error)
	switch cc := c.(type) {
	case *net.TCPConn:
		write = func(v *net.Buffers) (int64, error) { return v.WriteTo(cc) }
	case buffersWriter:
		write = cc.WriteBuffers
	default:
		b.Fatalf("%T has no gathered write", c)
	}

	readDone := discardReader(a, 64<<10)

	bufs := make([][]byte, writevBufs)
	for i := range bufs {
		bufs[i] = make([]byte, writevSize)
		for j := range bufs[i] {
			bufs[i][j] = byte(i + j)
		}
	}
	// Both writers consume the Buffers (and trim its first element on a
	// partial write), so each iteration writes a fresh copy of the slice.
	scratch := make([][]byte, writevBufs)

	b.SetBytes(writevBufs * writevSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		copy(scratch, bufs)
		v := net.Buffers(scratch)
		n, err := write(&v)
		if err != nil {
			b.Fatalf("writev: %v", err)
		}
		if n != writevBufs*writevSize {
			b.Fatalf("wrote %d bytes, want %d", n, writevBufs*writevSize)
		}
	}
	if err := c.Close(); err != nil {
		b.Errorf("closing the writer: %v", err)
	}
	res := <-readDone
	b.StopTimer()
	if res.Err != nil {
		b.Errorf("reader: %v", res.Err)
	}
	if want := int64(b.N) * writevBufs * writevSize; res.N != want {
		b.Errorf("reader got %d bytes, want %d", res.N, want)
	}
}
