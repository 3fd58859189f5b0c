//go:build linux

package main

// The children of the socket workloads that are not
// internal/benchharness's already (pingpong, bulk, accept and pipe are).

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// openPairs opens n connected pairs of s: clients dialled, servers
// accepted (by a goroutine, so the accept queue never fills). On error
// it closes what it opened.
func openPairs(s benchharness.Stack, n int) (clients, servers []net.Conn, err error) {
	ln, err := s.Listen()
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	servers = make([]net.Conn, 0, n)
	go func() {
		for range n {
			c, err := ln.Accept()
			if err != nil {
				accepted <- err
				return
			}
			servers = append(servers, c)
		}
		accepted <- nil
	}()
	clients = make([]net.Conn, 0, n)
	for i := range n {
		c, err := s.DialTCP(ln.Addr().String())
		if err != nil {
			ln.Close()
			<-accepted
			closePairs(clients, servers)
			return nil, nil, fmt.Errorf("dial %d of %d: %w", i, n, err)
		}
		clients = append(clients, c)
	}
	if err := <-accepted; err != nil {
		closePairs(clients, servers)
		return nil, nil, fmt.Errorf("accept: %w", err)
	}
	return clients, servers, nil
}

// closePairs closes every conn and returns the first error.
func closePairs(sets ...[]net.Conn) error {
	var first error
	for _, set := range sets {
		for _, c := range set {
			if err := c.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// echoMany runs 64-byte ping-pong on conns connections at once: a client
// goroutine per connection, a server goroutine per connection echoing.
// An operation is one round trip.
func echoMany(s benchharness.Stack, conns int, duration time.Duration) (result, error) {
	if conns < 1 {
		return result{}, fmt.Errorf("-size %d", conns)
	}
	clients, servers, err := openPairs(s, conns)
	if err != nil {
		return result{}, err
	}
	var echoes sync.WaitGroup
	echoErrs := make([]error, conns)
	for i, c := range servers {
		echoes.Go(func() { echoErrs[i] = echo(c) })
	}
	type buffers struct{ msg, reply []byte }
	bufs := make([]buffers, conns)
	for i := range bufs {
		bufs[i] = buffers{make([]byte, pingSize), make([]byte, pingSize)}
	}
	roundTrip := func(w int) error {
		c, b := clients[w], bufs[w]
		if _, err := c.Write(b.msg); err != nil {
			return err
		}
		_, err := io.ReadFull(c, b.reply)
		return err
	}
	run, loopErr := benchharness.RunConcurrent(conns, 10, duration, roundTrip)
	closeErr := closePairs(clients) // each echo reads EOF and ends
	echoes.Wait()
	closeErr = errors.Join(closeErr, closePairs(servers))
	if err := errors.Join(loopErr, errors.Join(echoErrs...), closeErr); err != nil {
		return result{}, err
	}
	r := run.Result()
	r.Bytes = r.Ops * pingSize
	return r, nil
}

// echo sends back every 64-byte message on c until EOF.
func echo(c net.Conn) error {
	buf := make([]byte, pingSize)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		if _, err := c.Write(buf); err != nil {
			return err
		}
	}
}

// scalePingPong is pingpong with idle connected pairs of the same stack
// open (and so registered with its poller) meanwhile.
func scalePingPong(s benchharness.Stack, idle int, duration time.Duration) (result, error) {
	var clients, servers []net.Conn
	if idle > 0 {
		var err error
		if clients, servers, err = openPairs(s, idle); err != nil {
			return result{}, err
		}
	}
	r, err := benchharness.TCPPingPong(s, pingSize, duration, new(benchharness.Histogram))
	if err := errors.Join(err, closePairs(clients, servers)); err != nil {
		return result{}, err
	}
	r.Extra["idle_conns"] = float64(idle)
	return r, nil
}
