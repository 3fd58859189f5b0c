//go:build linux

// Command idle holds 10,000 idle loopback connections the way a
// WaitRead server does: one goroutine per connection parked in WaitRead,
// with no read buffer until data arrives. It prints the heap and goroutine
// stack per connection, then closes the clients and checks every parked
// goroutine woke (WaitRead returns nil at EOF). Both ends live in this
// process, so each connection costs two descriptors: if RLIMIT_NOFILE is
// too low for 10,000 it uses fewer and says so.
//
//	go run ./examples/idle
package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

func main() {
	time.AfterFunc(60*time.Second, func() {
		fmt.Println("FAIL still running after 60s")
		os.Exit(1)
	})
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

func memNow() (heap, stack uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

func run() error {
	n := 10000
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err == nil { // Go raised the soft limit to the hard one at start
		if max := int(lim.Cur)/2 - 100; max < n {
			n = max
			fmt.Printf("RLIMIT_NOFILE is %d: holding %d connections instead of 10,000\n", lim.Cur, n)
		}
	}
	if n < 1 {
		return fmt.Errorf("RLIMIT_NOFILE %d is too low", lim.Cur)
	}

	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	h0, _ := memNow()
	srv := make([]net.Conn, 0, n)
	cli := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range append(srv, cli...) {
			c.Close()
		}
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		if err != nil {
			return fmt.Errorf("dial %d: %w", i, err)
		}
		cli = append(cli, c)
		s, err := ln.Accept()
		if err != nil {
			return fmt.Errorf("accept %d: %w", i, err)
		}
		srv = append(srv, s)
	}
	fmt.Printf("%d connections up in %v\n", n, time.Since(start).Round(time.Millisecond))
	h1, s1 := memNow()

	var woke atomic.Int64
	var wg sync.WaitGroup
	for _, c := range srv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.(gatenet.ContextIO).WaitRead(context.Background()) == nil {
				woke.Add(1)
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let them park
	h2, s2 := memNow()
	per := func(b, a uint64) float64 { return float64(int64(b)-int64(a)) / float64(n) }
	fmt.Printf("conns alone (both ends, client and server): heap %.0f B per conn\n", per(h1, h0))
	fmt.Printf("parked in WaitRead, no read buffers: +%.0f B heap and +%.0f B goroutine stack per conn (%d goroutines)\n",
		per(h2, h1), per(s2, s1), runtime.NumGoroutine())

	start = time.Now()
	for _, c := range cli {
		c.Close() // each server side becomes readable (EOF)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		return fmt.Errorf("only %d of %d WaitReads returned 20s after the clients closed", woke.Load(), n)
	}
	fmt.Printf("closed the clients: %d of %d WaitReads returned in %v\n", woke.Load(), n, time.Since(start).Round(time.Millisecond))
	if woke.Load() != int64(n) {
		return fmt.Errorf("%d WaitReads returned an error", int64(n)-woke.Load())
	}
	return nil
}
