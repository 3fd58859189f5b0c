//go:build linux

// Command tour is a self-checking walk through gatenet, one line per step:
//
//  1. HTTPS with HTTP/2: an http.Server on a gatenet listener with a
//     certificate from an in-process CA (tlstest), fetched by an
//     http.Client whose transport dials through a gatenet.Dialer;
//  2. a gatenet pipe read times out on its deadline, then a blocked read is
//     unblocked by Close with os.ErrClosed;
//  3. WaitRead holds 1,000 idle loopback connections, one parked goroutine
//     each and no read buffer; one client writes and exactly that
//     connection wakes;
//  4. a ReadyQueue watches 1,000 connections with no goroutine per
//     connection and hands out the one that became readable;
//  5. the default poller's Stats, with nothing registered any more and
//     its drain loop gone;
//  6. a short side-by-side TCP ping-pong (64 B), net against gatenet
//     (informational: the ratio never fails the tour).
//
// It needs nothing but the repository and loopback, takes a few seconds,
// and exits with status 1 if any step misbehaves (or if the whole tour is
// still running after 30 s).
//
//	go run ./examples/tour
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/pollfd"
	"github.com/gatenet/gatenet/tlstest"
)

var failed bool

// step prints one line for a step, marked FAIL if it misbehaved.
func step(ok bool, name, format string, args ...any) {
	mark := "ok  "
	if !ok {
		mark = "FAIL"
		failed = true
	}
	fmt.Printf("%s %-10s %s\n", mark, name, fmt.Sprintf(format, args...))
}

func main() {
	time.AfterFunc(30*time.Second, func() {
		fmt.Println("FAIL watchdog: the tour was still running after 30s")
		os.Exit(1)
	})
	start := time.Now()
	for _, s := range []struct {
		name string
		run  func(name string) error
	}{
		{"https", tourHTTPS},
		{"pipe", tourPipe},
		{"waitread", tourWaitRead},
		{"readyqueue", tourReadyQueue},
		{"stats", tourStats},
		{"pingpong", tourPingPong},
	} {
		if err := s.run(s.name); err != nil {
			step(false, s.name, "%v", err)
		}
	}
	if failed {
		fmt.Printf("FAIL tour finished in %v with failures\n", time.Since(start).Round(time.Millisecond))
		os.Exit(1)
	}
	fmt.Printf("ok   tour finished in %v\n", time.Since(start).Round(time.Millisecond))
}

// tourHTTPS serves HTTP/2 over TLS on a gatenet listener and fetches from it
// through a gatenet dialer.
func tourHTTPS(name string) error {
	ca, err := tlstest.NewCA()
	if err != nil {
		return err
	}
	leaf, err := ca.Leaf(tlstest.ECDSA, "127.0.0.1")
	if err != nil {
		return err
	}
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0") // the one-line swap for net.Listen
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "hello over %s", r.Proto)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{leaf}, NextProtos: []string{"h2", "http/1.1"}},
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()

	tr := &http.Transport{
		DialContext:       (&gatenet.Dialer{Timeout: 5 * time.Second}).DialContext,
		TLSClientConfig:   ca.ClientConfig(),
		ForceAttemptHTTP2: true,
	}
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	t0 := time.Now()
	r, err := client.Get("https://" + ln.Addr().String() + "/")
	var body []byte
	if err == nil {
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
	}
	elapsed := time.Since(t0)
	tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shutErr := srv.Shutdown(ctx)
	if serveErr := <-served; !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("ServeTLS: %v", serveErr)
	}
	if err != nil {
		return fmt.Errorf("GET: %v", err)
	}
	const want = "hello over HTTP/2.0"
	step(r.ProtoMajor == 2 && string(body) == want && shutErr == nil, name,
		"GET https://%s/ through a gatenet dialer: %s %q in %v (TLS 1.3 + h2, in-process CA), server shut down",
		ln.Addr(), r.Proto, body, elapsed.Round(time.Millisecond))
	return nil
}

// tourPipe: a read deadline on a gatenet pipe, then Close unblocking a Read.
func tourPipe(name string) error {
	r, w, err := gatenet.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	buf := make([]byte, 16)
	const deadline = 100 * time.Millisecond
	r.SetReadDeadline(time.Now().Add(deadline))
	t0 := time.Now()
	_, err = r.Read(buf)
	elapsed := time.Since(t0)
	step(errors.Is(err, os.ErrDeadlineExceeded) && elapsed >= deadline-5*time.Millisecond && elapsed < 2*time.Second, name,
		"read with a %v deadline returned os.ErrDeadlineExceeded after %v", deadline, elapsed.Round(time.Millisecond))

	r.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := r.Read(buf)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	t0 = time.Now()
	r.Close()
	select {
	case err := <-done:
		step(errors.Is(err, os.ErrClosed), name, "blocked read unblocked by Close %v later: %v", time.Since(t0).Round(time.Microsecond), err)
	case <-time.After(5 * time.Second):
		return errors.New("a blocked read was still blocked 5s after Close")
	}
	return nil
}

// loopbackConns dials n gatenet connections to a gatenet listener and
// returns the server sides and the client sides.
func loopbackConns(n int) (srv, cli []net.Conn, err error) {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	for i := 0; i < n; i++ {
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		if err != nil {
			closeAll(srv, cli)
			return nil, nil, fmt.Errorf("dial %d: %w", i, err)
		}
		s, err := ln.Accept()
		if err != nil {
			c.Close()
			closeAll(srv, cli)
			return nil, nil, fmt.Errorf("accept %d: %w", i, err)
		}
		cli = append(cli, c)
		srv = append(srv, s)
	}
	return srv, cli, nil
}

func closeAll(sets ...[]net.Conn) {
	for _, set := range sets {
		for _, c := range set {
			c.Close()
		}
	}
}

const nConns = 1000

// tourWaitRead parks a goroutine per connection in WaitRead and wakes one.
func tourWaitRead(name string) error {
	srv, cli, err := loopbackConns(nConns)
	if err != nil {
		return err
	}
	defer closeAll(srv, cli)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woke := make(chan int, nConns)
	var wg sync.WaitGroup
	before := runtime.NumGoroutine()
	for i, c := range srv {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c.(gatenet.ContextIO).WaitRead(ctx) == nil {
				woke <- i
			}
		}()
	}
	time.Sleep(100 * time.Millisecond) // let them all park
	parked := runtime.NumGoroutine() - before
	const chosen = 417
	t0 := time.Now()
	if _, err := cli[chosen].Write([]byte("x")); err != nil {
		return err
	}
	var got int
	select {
	case got = <-woke:
	case <-time.After(5 * time.Second):
		cancel()
		wg.Wait()
		return errors.New("no WaitRead woke 5s after a write")
	}
	latency := time.Since(t0)
	time.Sleep(50 * time.Millisecond) // would any other wake spuriously?
	others := len(woke)
	cancel()
	wg.Wait()
	others += len(woke)
	buf := make([]byte, 1)
	n, err := srv[got].Read(buf)
	step(got == chosen && others == 0 && n == 1 && err == nil, name,
		"%d idle conns, %d goroutines parked in WaitRead (no read buffers); a write to #%d woke exactly #%d in %v, %d others woke",
		nConns, parked, chosen, got, latency.Round(time.Microsecond), others)
	return nil
}

// tourReadyQueue watches many connections from one goroutine.
func tourReadyQueue(name string) error {
	srv, cli, err := loopbackConns(nConns)
	if err != nil {
		return err
	}
	defer closeAll(srv, cli)
	q := gatenet.NewReadyQueue()
	defer q.Close()
	before := runtime.NumGoroutine()
	for _, c := range srv {
		if err := q.Add(c.(gatenet.Pollable)); err != nil {
			return fmt.Errorf("ReadyQueue.Add: %w", err)
		}
	}
	added := runtime.NumGoroutine() - before
	const chosen = 731
	t0 := time.Now()
	if _, err := cli[chosen].Write([]byte("y")); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	p, err := q.Next(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("ReadyQueue.Next: %w", err)
	}
	latency := time.Since(t0)
	idx := -1
	for i, c := range srv {
		if c.(gatenet.Pollable) == p {
			idx = i
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err = q.Next(ctx) // nothing else is readable
	cancel()
	quiet := errors.Is(err, context.DeadlineExceeded)
	step(idx == chosen && added <= 0 && quiet, name,
		"%d conns watched with %d extra goroutines; Next reported #%d (written: #%d) in %v, then nothing else (%v)",
		nConns, added, idx, chosen, latency.Round(time.Microsecond), err)
	return nil
}

// tourStats prints the default poller's counters. Earlier steps closed
// every descriptor, so the drain loop must exit (5 ms after the last
// Close) and leave no gatenet goroutine behind.
func tourStats(name string) error {
	p := pollfd.Default()
	s := p.Stats()
	for limit := time.Now().Add(2 * time.Second); (s.Registered != 0 || s.DrainLoops != 0) && time.Now().Before(limit); s = p.Stats() {
		time.Sleep(time.Millisecond)
	}
	step(s.Registered == 0 && s.DrainLoops == 0 && s.Events > 0 && s.Parks > 0 && s.WakeupsEvent > 0 && s.WakeupsDeadline > 0 && s.WakeupsClose > 0, name,
		"registered now %d, drain loops running %d (starts so far: %d), events %d, epoll_waits %d, parks %d, wake-ups %d (event %d, deadline %d, close %d), canceled %d, harvests %d",
		s.Registered, s.DrainLoops, s.DrainStarts, s.Events, s.EpollWaits, s.Parks, s.Wakeups, s.WakeupsEvent, s.WakeupsDeadline, s.WakeupsClose, s.Canceled, s.Harvests)
	return nil
}

// pingPong runs 64-byte round trips over one connection for d and returns
// round trips per second.
func pingPong(listen func() (net.Listener, error), dial func(addr string) (net.Conn, error), d time.Duration) (float64, error) {
	ln, err := listen()
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	echoed := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			echoed <- err
			return
		}
		defer s.Close()
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(s, buf); err != nil {
				echoed <- nil // the client closed
				return
			}
			if _, err := s.Write(buf); err != nil {
				echoed <- err
				return
			}
		}
	}()
	c, err := dial(ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, 64)
	c.SetDeadline(time.Now().Add(d + 5*time.Second))
	n := 0
	t0 := time.Now()
	for time.Since(t0) < d {
		if _, err := c.Write(buf); err != nil {
			c.Close()
			return 0, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			c.Close()
			return 0, err
		}
		n++
	}
	rate := float64(n) / time.Since(t0).Seconds()
	c.Close()
	if err := <-echoed; err != nil {
		return 0, err
	}
	return rate, nil
}

func tourPingPong(name string) error {
	const d = time.Second
	std, err := pingPong(func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") },
		func(a string) (net.Conn, error) { return net.Dial("tcp", a) }, d)
	if err != nil {
		return fmt.Errorf("net ping-pong: %w", err)
	}
	gn, err := pingPong(func() (net.Listener, error) { return gatenet.Listen("tcp", "127.0.0.1:0") },
		func(a string) (net.Conn, error) { return gatenet.Dial("tcp", a) }, d)
	if err != nil {
		return fmt.Errorf("gatenet ping-pong: %w", err)
	}
	step(std > 0 && gn > 0, name,
		"TCP ping-pong 64 B, %v each: net %.1fk rt/s, gatenet %.1fk rt/s, ratio %.2f (informational; one run, noisy)",
		d, std/1000, gn/1000, gn/std)
	return nil
}
