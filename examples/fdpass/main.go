//go:build linux

// Command fdpass passes a descriptor between processes' worth of code with
// SCM_RIGHTS over a gatenet Unix socket: it makes a Unix socket pair, wraps
// each end with gatenet.FileConn (a *gatenet.UnixConn), sends a gatenet
// pipe's write end with WriteMsgUnix, receives it with ReadMsgUnix, wraps
// the received number with gatenet.NewFile and writes through it; the
// message comes out of the pipe's read end. It exits with status 1 if the
// message differs.
//
//	go run ./examples/fdpass
package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

func main() {
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

// unixPair returns the two ends of a connected AF_UNIX stream socket pair
// as gatenet conns.
func unixPair() (a, b *gatenet.UnixConn, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var conns [2]*gatenet.UnixConn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), fmt.Sprintf("socketpair-%d", i))
		c, err := gatenet.FileConn(f) // takes a copy of the descriptor
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			} else {
				unix.Close(fds[1])
			}
			return nil, nil, err
		}
		conns[i] = c.(*gatenet.UnixConn)
	}
	return conns[0], conns[1], nil
}

func run() error {
	sender, receiver, err := unixPair()
	if err != nil {
		return err
	}
	defer sender.Close()
	defer receiver.Close()
	receiver.SetDeadline(time.Now().Add(5 * time.Second))

	pr, pw, err := gatenet.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()

	// Send the write end's number. SyscallConn().Control reads it without
	// Fd's side effect of making the descriptor blocking.
	raw, err := pw.SyscallConn()
	if err != nil {
		return err
	}
	var sendErr error
	if err := raw.Control(func(fd uintptr) {
		_, _, sendErr = sender.WriteMsgUnix([]byte("fd"), unix.UnixRights(int(fd)), nil)
	}); err != nil {
		return err
	}
	if sendErr != nil {
		return sendErr
	}
	pw.Close() // the receiver's copy keeps the pipe's write end open
	fmt.Println("sent the pipe's write end with SCM_RIGHTS, closed ours")

	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := receiver.ReadMsgUnix(buf, oob)
	if err != nil {
		return err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("control messages: %d, %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return fmt.Errorf("rights: %v, %v", fds, err)
	}
	passed := gatenet.NewFile(uintptr(fds[0]), "passed-pipe-w")
	fmt.Printf("received %q with descriptor %d\n", buf[:n], fds[0])

	const msg = "written through the passed descriptor"
	if _, err := passed.Write([]byte(msg)); err != nil {
		return err
	}
	passed.Close() // the last write end: the reader sees EOF next
	pr.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(pr)
	if err != nil {
		return err
	}
	fmt.Printf("pipe's read end got %q, then EOF\n", got)
	if string(got) != msg {
		return fmt.Errorf("want %q", msg)
	}
	return nil
}
