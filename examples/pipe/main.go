//go:build linux

// Command pipe shows what a gatenet.Pipe adds to os.Pipe's behaviour on
// Linux, one line per step:
//
//  1. a read deadline: a Read on an empty pipe with a 100 ms deadline fails
//     with an error that is os.ErrDeadlineExceeded, after about 100 ms;
//  2. Close unblocks: with the deadline cleared, a Read blocked in another
//     goroutine returns os.ErrClosed when main closes the read end ~50 ms
//     later;
//  3. data passes normally on a fresh pipe, and after the write end is
//     closed the reader sees io.EOF.
//
// It exits with status 1 if any step misbehaves.
//
//	go run ./examples/pipe
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gatenet/gatenet"
)

var failed bool

// step prints one line for a step, marked FAIL if it misbehaved.
func step(ok bool, format string, args ...any) {
	mark := "ok  "
	if !ok {
		mark = "FAIL"
		failed = true
	}
	fmt.Printf("%s %s\n", mark, fmt.Sprintf(format, args...))
}

func main() {
	// A step that hangs (a deadline that never fires) is a failure too.
	time.AfterFunc(10*time.Second, func() {
		fmt.Println("FAIL a step still hung after 10s")
		os.Exit(1)
	})
	if err := run(); err != nil {
		step(false, "%v", err)
	}
	if failed {
		os.Exit(1)
	}
}

func run() error {
	r, w, err := gatenet.Pipe()
	if err != nil {
		return fmt.Errorf("gatenet.Pipe: %w", err)
	}
	defer w.Close()
	defer r.Close() // a second Close after step 2 just reports os.ErrClosed
	buf := make([]byte, 64)

	// 1. A read deadline on an empty pipe.
	const deadline = 100 * time.Millisecond
	if err := r.SetReadDeadline(time.Now().Add(deadline)); err != nil {
		return fmt.Errorf("SetReadDeadline: %w", err)
	}
	start := time.Now()
	n, err := r.Read(buf)
	elapsed := time.Since(start)
	timedOut := errors.Is(err, os.ErrDeadlineExceeded)
	step(n == 0 && timedOut && elapsed >= deadline-5*time.Millisecond && elapsed < 2*time.Second,
		"read with a %v deadline: %v (errors.Is(err, os.ErrDeadlineExceeded) = %t) after %v",
		deadline, err, timedOut, elapsed.Round(time.Millisecond))

	// 2. Close unblocks a blocked Read.
	if err := r.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("clearing the read deadline: %w", err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := r.Read(buf)
		readErr <- err
	}()
	const closeAfter = 50 * time.Millisecond
	select {
	case err := <-readErr:
		step(false, "Read returned before Close (deadline not cleared?): %v", err)
		return nil
	case <-time.After(closeAfter):
	}
	closedAt := time.Now()
	if err := r.Close(); err != nil {
		return fmt.Errorf("closing the read end: %w", err)
	}
	select {
	case err := <-readErr:
		closed := errors.Is(err, os.ErrClosed)
		step(closed, "Read blocked for %v was unblocked by Close: %v (errors.Is(err, os.ErrClosed) = %t) %v after Close",
			closeAfter, err, closed, time.Since(closedAt).Round(time.Microsecond))
	case <-time.After(5 * time.Second):
		step(false, "Read still blocked 5s after Close")
		return nil // the goroutine is stuck; exit reports the failure
	}

	// 3. Data passes normally.
	r2, w2, err := gatenet.Pipe()
	if err != nil {
		return fmt.Errorf("gatenet.Pipe: %w", err)
	}
	defer r2.Close()
	const msg = "hello through a gatenet pipe"
	go func() {
		w2.Write([]byte(msg)) // a short write shows up as a mismatch below
		w2.Close()
	}()
	got, err := io.ReadAll(r2) // reads until the writer's Close gives io.EOF
	step(err == nil && string(got) == msg,
		"data: read %q, then io.EOF once the write end closed (err = %v)", got, err)
	return nil
}
