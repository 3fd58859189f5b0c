//go:build linux

package gatenet_test

// The examples of the File side: pipes, FIFOs, descriptors from elsewhere
// and a child's output, each with a deadline *os.File would not honour.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

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

// A read bounded by a deadline, and ended early by Close from another
// goroutine: it returns os.ErrClosed, as *os.File's does.
func ExampleFile_Close() {
	r, w, err := gatenet.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	r.SetReadDeadline(time.Now().Add(10 * time.Second)) // the bound, should Close never come
	done := make(chan error)
	go func() {
		_, err := r.Read(make([]byte, 8)) // nothing written: blocks
		done <- err
	}()
	time.Sleep(10 * time.Millisecond) // let it block (it returns the same if not yet)
	r.Close()
	err = <-done
	fmt.Println(errors.Is(err, os.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded))
	// Output: true false
}

// File.WaitRead parks until the pipe is readable, with no buffer, and
// consumes nothing.
func ExampleFile_WaitRead() {
	r, w, err := gatenet.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	defer w.Close()

	go w.Write([]byte("wake"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("readable:", r.WaitRead(ctx))
	buf := make([]byte, 4)
	n, err := io.ReadFull(r, buf)
	fmt.Println(string(buf[:n]), err)

	// A done context ends it with the read's *fs.PathError wrapping
	// ctx.Err(), not os.ErrDeadlineExceeded.
	cancel()
	err = r.WaitRead(ctx)
	var pe *fs.PathError
	fmt.Println(errors.As(err, &pe), errors.Is(err, context.Canceled))
	// Output:
	// readable: <nil>
	// wake <nil>
	// true true
}

// OpenFile on a FIFO: reads with deadlines, which os.OpenFile's blocking
// FIFO does not give.
func ExampleOpenFile() {
	dir, err := os.MkdirTemp("", "gatenet-fifo")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		fmt.Println(err)
		return
	}
	// O_NONBLOCK: opening the read end does not wait for a writer.
	r, err := gatenet.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	w, err := gatenet.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	buf := make([]byte, 16)
	r.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = r.Read(buf)
	fmt.Println("nothing written yet:", errors.Is(err, os.ErrDeadlineExceeded))

	r.SetReadDeadline(time.Now().Add(10 * time.Second))
	w.WriteString("through the fifo")
	n, err := r.Read(buf)
	fmt.Println(string(buf[:n]), err)
	// Output:
	// nothing written yet: true
	// through the fifo <nil>
}

// StdoutPipe gives a child's output as a gatenet File: a deadline bounds
// the read, so a child that stops talking (or a grandchild holding the
// pipe) cannot hang the reader, and Wait leaves the File open.
func ExampleStdoutPipe() {
	cmd := exec.Command("echo", "hello from a child")
	out, err := gatenet.StdoutPipe(cmd)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer out.Close()
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		return
	}
	out.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(out)
	fmt.Printf("%q %v %v\n", b, err, cmd.Wait())
	// Output: "hello from a child\n" <nil> <nil>
}
