//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

// Listen is net.Listen: the listener and the conns it accepts are gatenet's.
func ExampleListen() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "hello from %T", c)
	}()

	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	msg, err := io.ReadAll(c)
	<-done
	fmt.Println(string(msg), err)
	// Output: hello from *gatenet.TCPConn <nil>
}

// A Dialer is net.Dialer; DialContext honours the context's deadline.
func ExampleDialer_DialContext() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()

	d := gatenet.Dialer{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println(c.RemoteAddr().String() == ln.Addr().String(), s.RemoteAddr().String() == c.LocalAddr().String())
	// Output: true true
}

// Pipe is os.Pipe with deadlines, and Close unblocks a blocked Read.
func ExamplePipe() {
	r, w, err := gatenet.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	defer r.Close()

	buf := make([]byte, 8)
	r.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = r.Read(buf)
	fmt.Println(errors.Is(err, os.ErrDeadlineExceeded))

	r.SetReadDeadline(time.Time{})
	w.Write([]byte("data"))
	n, err := r.Read(buf)
	fmt.Println(string(buf[:n]), err)
	// Output:
	// true
	// data <nil>
}

// NewFile makes a descriptor from elsewhere (here a pipe made by a raw
// system call) pollable, so deadlines work on it.
func ExampleNewFile() {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil { // blocking ends
		fmt.Println(err)
		return
	}
	r := gatenet.NewFile(uintptr(p[0]), "pipe-r")
	w := gatenet.NewFile(uintptr(p[1]), "pipe-w")
	defer r.Close()
	defer w.Close()

	r.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := r.Read(make([]byte, 1))
	fmt.Println(r.Name(), errors.Is(err, os.ErrDeadlineExceeded))
	// Output: pipe-r true
}

// WaitRead parks until the conn is readable without a buffer and consumes
// nothing; a Read then takes the data.
func ExampleTCPConn_WaitRead() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	c.Write([]byte("ping"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.(*gatenet.TCPConn).WaitRead(ctx)
	fmt.Println("readable:", err)
	buf := make([]byte, 4)
	n, _ := io.ReadFull(s, buf)
	fmt.Println(string(buf[:n]))
	// Output:
	// readable: <nil>
	// ping
}

// ReadContext bounds one Read by a context, with no goroutine or timer per
// call; after a cancellation the conn stays usable.
func ExampleTCPConn_ReadContext() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	conn := s.(*gatenet.TCPConn)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	buf := make([]byte, 8)
	_, err = conn.ReadContext(ctx, buf)
	fmt.Println(errors.Is(err, context.Canceled))
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		fmt.Println("*net.OpError", opErr.Op)
	}

	c.Write([]byte("still ok"))
	n, err := io.ReadFull(conn, buf)
	fmt.Println(string(buf[:n]), err)
	// Output:
	// true
	// *net.OpError read
	// still ok <nil>
}
