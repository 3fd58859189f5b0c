//go:build linux

// Command exec watches many child processes with one goroutine: each
// child's stdout and stderr are gatenet Files (gatenet.StdoutPipe and
// StderrPipe), all on one ReadyQueue. It prints every line with its
// child's name, kills a child silent for longer than a deadline, and ends
// the rest with a context, and it counts goroutines to show that none
// runs per stream (os/exec with a non-*os.File Stdout, or a reader per
// StdoutPipe, would add one per stream). The children are this program
// re-executed, so it needs nothing installed.
//
//	go run ./examples/exec
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/gatenet/gatenet"
)

// childEnv holds a child's role: "chatty:N" prints N lines, "stuck" says
// nothing.
const childEnv = "GATENET_EXAMPLE_CHILD"

const (
	silenceLimit = 500 * time.Millisecond // a child silent this long is killed
	overall      = 10 * time.Second       // the context that ends the rest
)

func main() {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

// runChild is a child's whole life.
func runChild(role string) int {
	if role == "stuck" {
		time.Sleep(time.Minute)
		return 0
	}
	n, _ := strconv.Atoi(role[len("chatty:"):])
	for i := 1; i <= n; i++ {
		fmt.Printf("line %d of %d\n", i, n)
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintln(os.Stderr, "done")
	return 0
}

// stream is one child's stdout or stderr.
type stream struct {
	child *child
	name  string // "out" or "err"
	f     *gatenet.File
	buf   []byte // a line not yet complete
}

type child struct {
	name  string
	cmd   *exec.Cmd
	heard time.Time // when it last wrote
	open  int       // its streams not yet at EOF
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), overall)
	defer cancel()
	goroutinesBefore := runtime.NumGoroutine()

	q := gatenet.NewReadyQueue()
	defer q.Close()
	streams := map[*gatenet.File]*stream{}
	var children []*child
	for i, role := range []string{"chatty:3", "chatty:5", "chatty:8", "stuck"} {
		c := &child{name: "child-" + strconv.Itoa(i+1), cmd: exec.Command(os.Args[0]), heard: time.Now()}
		c.cmd.Env = append(os.Environ(), childEnv+"="+role)
		out, err := gatenet.StdoutPipe(c.cmd)
		if err != nil {
			return err
		}
		errs, err := gatenet.StderrPipe(c.cmd)
		if err != nil {
			return err
		}
		if err := c.cmd.Start(); err != nil {
			return err
		}
		for _, s := range []*stream{{child: c, name: "out", f: out}, {child: c, name: "err", f: errs}} {
			streams[s.f] = s
			c.open++
			if err := q.Add(s.f); err != nil {
				return err
			}
		}
		children = append(children, c)
	}
	// No goroutine per stream: the one more is gatenet's drain loop.
	fmt.Printf("watching %d streams of %d children; goroutines: %d before, %d now\n",
		len(streams), len(children), goroutinesBefore, runtime.NumGoroutine())

	// A read that never parks: with a context already done, ReadContext
	// returns what is there, io.EOF, or the context's error.
	done, stop := context.WithCancel(context.Background())
	stop()
	buf := make([]byte, 4096)
	for open := len(streams); open > 0; {
		// Wake at least every tick to look for silent children.
		tick, cancelTick := context.WithTimeout(ctx, silenceLimit/5)
		p, err := q.Next(tick)
		cancelTick()
		switch {
		case ctx.Err() != nil:
			fmt.Println("time is up: ending the rest")
			killAll(children)
			return drain(streams)
		case err != nil: // the tick
			killSilent(children)
			continue
		}
		s := streams[p.(*gatenet.File)]
		n, err := s.f.ReadContext(done, buf)
		if n > 0 {
			s.child.heard = time.Now()
			s.buf = printLines(s, append(s.buf, buf[:n]...))
		}
		switch {
		case err == nil || errors.Is(err, context.Canceled):
			q.Add(s.f) // read once; the queue reports it again when there is more
		case err == io.EOF:
			s.f.Close()
			open--
			if s.child.open--; s.child.open == 0 {
				fmt.Printf("%s: exited (%v)\n", s.child.name, s.child.cmd.Wait())
			}
		default:
			return err
		}
	}
	fmt.Printf("all streams at EOF; goroutines: %d\n", runtime.NumGoroutine())
	return nil
}

// printLines prints the complete lines in b, prefixed with the stream's
// name, and returns what is left.
func printLines(s *stream, b []byte) []byte {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return b
		}
		fmt.Printf("%s %s: %s\n", s.child.name, s.name, b[:i])
		b = b[i+1:]
	}
}

// killSilent kills every running child silent for longer than silenceLimit:
// its streams then reach EOF.
func killSilent(children []*child) {
	for _, c := range children {
		if c.open > 0 && time.Since(c.heard) > silenceLimit && c.cmd.ProcessState == nil {
			fmt.Printf("%s: silent for %v, killing it\n", c.name, silenceLimit)
			c.cmd.Process.Kill()
			c.heard = time.Now()
		}
	}
}

func killAll(children []*child) {
	for _, c := range children {
		if c.open > 0 {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	}
}

// drain closes every stream still open.
func drain(streams map[*gatenet.File]*stream) error {
	for f := range streams {
		f.Close()
	}
	return errors.New("not every child finished in time")
}
