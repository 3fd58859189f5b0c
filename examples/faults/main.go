//go:build linux

// Command faults shows faults on purpose: an HTTP server and its client
// over connections that deliver at most 7 bytes per system call, a reader
// that assumes one Read per message breaking under the same faults, and a
// connection reset after 1,000 bytes. It prints what was injected and the
// seed that replays it, and exits with status 1 if an outcome differs.
//
//	go run ./examples/faults
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
)

func main() {
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

func run() error {
	f := faults.New(42, faults.Slicer{Min: 1, Max: 7})

	// 1. net/http, unchanged, over sliced connections.
	ln, err := (&gatenet.ListenConfig{Faults: f}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("gatenet ", 100))
	})}
	go srv.Serve(ln)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DialContext: (&gatenet.Dialer{Faults: f}).DialContext}}
	res, err := client.Get("http://" + ln.Addr().String())
	if err != nil {
		return err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	client.CloseIdleConnections()
	if err != nil || len(body) != 800 {
		return fmt.Errorf("GET: %d bytes, %v", len(body), err)
	}
	fmt.Printf("http: 800-byte body intact through %d chunks of 1-7 bytes\n", f.Stats().Chunks)

	// 2. A reader that assumes one Read per 64-byte message.
	c, s, err := pair(nil)
	if err != nil {
		return err
	}
	if err := gatenet.InjectFaults(s.(gatenet.Pollable), f); err != nil {
		return err
	}
	c.Write(make([]byte, 64))
	n, _ := s.Read(make([]byte, 64))
	c.Close()
	s.Close()
	if n >= 64 {
		return fmt.Errorf("a sliced Read got %d bytes", n)
	}
	fmt.Printf("naive reader: one Read got %d of 64 bytes (the bug the slicer finds)\n", n)

	// 3. A peer reset after 1,000 bytes.
	reset := faults.New(42, faults.ResetAfter{N: 1000})
	c, s, err = pair(reset)
	if err != nil {
		return err
	}
	defer c.Close()
	defer s.Close()
	wrote, _ := c.Write(make([]byte, 4096))
	got, err := io.ReadAll(s)
	if !errors.Is(err, syscall.ECONNRESET) {
		return fmt.Errorf("after a reset the peer's Read got %v", err)
	}
	fmt.Printf("reset: writer wrote %d bytes, peer read %d then %v\n", wrote, len(got), err)
	fmt.Printf("replay with GATENET_FAULTS='%v'; injected: %+v\n", f, f.Stats())
	return nil
}

// pair returns a connected TCP pair, the dialled end with f.
func pair(f *faults.Faults) (c, s net.Conn, err error) {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	c, err = (&gatenet.Dialer{Faults: f}).Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	if s, err = ln.Accept(); err != nil {
		c.Close()
		return nil, nil, err
	}
	return c, s, nil
}
