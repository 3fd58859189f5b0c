//go:build linux

// Command proxy is a TCP proxy between gatenet connections: for each client
// it dials the backend and runs io.Copy both ways. With gatenet conns on
// both sides io.Copy finds TCPConn.ReadFrom, which moves the bytes with
// splice(2) through a kernel pipe instead of through a Go buffer. It sends
// 8 MiB of random data client → proxy → echo backend → proxy → client,
// checks it comes back intact, and prints the throughput.
//
//	go run ./examples/proxy
package main

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/gatenet/gatenet"
)

const size = 8 << 20

func main() {
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

// serve accepts until ln closes, handling each conn in its own goroutine.
func serve(ln net.Listener, wg *sync.WaitGroup, handle func(net.Conn)) {
	defer wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			handle(c)
		}()
	}
}

func run() error {
	var wg sync.WaitGroup

	// The backend: an echo server that half-closes when the client does.
	backend, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer backend.Close()
	wg.Add(1)
	go serve(backend, &wg, func(c net.Conn) {
		io.Copy(c, c)
		c.(*gatenet.TCPConn).CloseWrite()
	})

	// The proxy: io.Copy each way between two gatenet conns.
	proxy, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer proxy.Close()
	wg.Add(1)
	go serve(proxy, &wg, func(client net.Conn) {
		up, err := gatenet.Dial("tcp", backend.Addr().String())
		if err != nil {
			return
		}
		defer up.Close()
		done := make(chan struct{})
		go func() {
			io.Copy(up, client) // client → backend: splice
			up.(*gatenet.TCPConn).CloseWrite()
			close(done)
		}()
		io.Copy(client, up) // backend → client: splice
		client.(*gatenet.TCPConn).CloseWrite()
		<-done
	})
	defer func() { backend.Close(); proxy.Close(); wg.Wait() }()

	data := make([]byte, size)
	rand.Read(data)
	c, err := gatenet.Dial("tcp", proxy.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	sent := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		c.(*gatenet.TCPConn).CloseWrite()
		sent <- err
	}()
	got, err := io.ReadAll(c)
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	if err := <-sent; err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("sent %d bytes, got %d back, not the same", len(data), len(got))
	}
	fmt.Printf("8 MiB through the proxy and back intact in %v (%.0f MB/s each way)\n",
		elapsed.Round(time.Millisecond), float64(size)/elapsed.Seconds()/1e6)
	return nil
}
