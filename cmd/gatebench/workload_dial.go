//go:build linux

package main

// dial: connection set-up and tear-down from several clients at once, the
// shape of a client pool that reconnects (TCPAccept is the one-client
// form, the "accept" workload).

import (
	"errors"
	"fmt"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// dialLoop runs clients goroutines, each over and over: Dial, read until
// EOF (the server accepts and closes at once), Close. One acceptor
// goroutine serves them all. An operation is one connection, timed.
func dialLoop(s benchharness.Stack, clients int, duration time.Duration) (result, error) {
	if clients < 1 {
		return result{}, fmt.Errorf("-size %d", clients)
	}
	ln, err := s.Listen()
	if err != nil {
		return result{}, err
	}
	addr := ln.Addr().String()
	acceptDone := benchharness.AcceptAndClose(ln)
	bufs := make([][1]byte, clients)
	conn := func(w int) error { return benchharness.DialReadEOF(s, addr, bufs[w][:]) }
	const warm = 25
	run, loopErr := benchharness.RunConcurrent(clients, warm, duration, conn)
	closeErr := ln.Close()
	g := <-acceptDone
	if err := errors.Join(loopErr, g.Err, closeErr); err != nil {
		return result{}, err
	}
	if want := int64(clients*warm) + run.Ops; g.N != want {
		return result{}, fmt.Errorf("accepted %d connections, dialled %d", g.N, want)
	}
	return run.Result(), nil
}
