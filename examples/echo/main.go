//go:build linux

// Command echo shows gatenet as a drop-in for net: an echo server on a
// gatenet listener and a client dialing it with gatenet.Dial, in one
// program. The client sends three lines and prints each echo; it exits with
// status 1 if an echo differs.
//
//	go run ./examples/echo
package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gatenet/gatenet"
)

func main() {
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

func run() error {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0") // was net.Listen
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the server: echo every connection until it closes
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener closed
			}
			wg.Add(1)
			go func(c net.Conn) {
				defer wg.Done()
				defer c.Close()
				io.Copy(c, c)
			}(c)
		}
	}()
	defer func() { ln.Close(); wg.Wait() }()

	c, err := gatenet.Dial("tcp", ln.Addr().String()) // was net.Dial
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Printf("connected %v -> %v\n", c.LocalAddr(), c.RemoteAddr())
	in := bufio.NewReader(c)
	for _, line := range []string{"hello", "gatenet", "goodbye"} {
		if _, err := fmt.Fprintln(c, line); err != nil {
			return err
		}
		got, err := in.ReadString('\n')
		if err != nil {
			return err
		}
		if got != line+"\n" {
			return fmt.Errorf("sent %q, echoed %q", line, got)
		}
		fmt.Printf("echo: %s", got)
	}
	return nil
}
