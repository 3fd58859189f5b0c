//go:build linux

// Command fifo reads a named pipe with deadlines — what os.OpenFile cannot
// give a FIFO. It makes a FIFO in a temporary directory, opens the read end
// with O_NONBLOCK (so the open does not wait for a writer) and the write end
// with gatenet.OpenFile, shows a read with a 100 ms deadline timing out with
// os.ErrDeadlineExceeded, then passes a message and sees EOF once the
// writer closes. It exits with status 1 if a step misbehaves.
//
//	go run ./examples/fifo
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

func run() error {
	dir, err := os.MkdirTemp("", "gatenet-fifo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return err
	}

	r, err := gatenet.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	w, err := gatenet.OpenFile(path, os.O_WRONLY, 0) // a reader exists: no wait
	if err != nil {
		return err
	}
	defer w.Close()

	buf := make([]byte, 64)
	const deadline = 100 * time.Millisecond
	r.SetReadDeadline(time.Now().Add(deadline))
	start := time.Now()
	_, err = r.Read(buf)
	elapsed := time.Since(start)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("read with a deadline on an empty FIFO: %v, want os.ErrDeadlineExceeded", err)
	}
	fmt.Printf("read on the empty FIFO with a %v deadline: %v after %v\n", deadline, err, elapsed.Round(time.Millisecond))

	const msg = "through the FIFO"
	if _, err := w.Write([]byte(msg)); err != nil {
		return err
	}
	w.Close()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	fmt.Printf("read %q, then EOF after the writer closed\n", got)
	if string(got) != msg {
		return fmt.Errorf("want %q", msg)
	}
	return nil
}
