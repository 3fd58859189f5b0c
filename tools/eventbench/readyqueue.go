//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gatenet/gatenet"
)

// maxReads bounds the reads a worker makes of one conn before it hands
// it back when others wait: a conn that never runs dry would otherwise
// hold its worker from them.
const maxReads = 16

type rqServer struct {
	counter
	ln   net.Listener
	q    *gatenet.ReadyQueue
	wg   sync.WaitGroup
	errs chan error // the workers' and the accept loop's unexpected errors
}

func (s *rqServer) Addr() string { return s.ln.Addr().String() }

// Close closes the listener, waits (a bounded time) for the workers to
// close every conn its client closed, then closes the queue.
func (s *rqServer) Close() error {
	err := s.ln.Close()
	for limit := time.Now().Add(30 * time.Second); s.Open() > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(limit) {
			err = errors.Join(err, fmt.Errorf("%d conns still open", s.Open()))
			break
		}
	}
	s.q.Close()
	s.wg.Wait()
	close(s.errs)
	for e := range s.errs {
		err = errors.Join(err, e)
	}
	return err
}

// startReadyQueue is the echo server on a gatenet ReadyQueue, written as
// the package's ExampleReadyQueue writes the worker loop and with its
// public API only: one goroutine accepts and adds each conn to the queue;
// workers goroutines take readable conns from Next, read without ever
// parking (ReadContext with a context already done), write the bytes
// back with q.Write (which never parks either: what the socket does not
// take waits in the queue, and a Next sends it), read again while reads
// fill the buffer (past maxReads only while no other report and none of
// the conn's output waits), and hand the conn back with Add; at io.EOF or
// an error they close it once its output is sent. This one function is
// the server: a faster API replaces it here.
func startReadyQueue(workers, readBuf int) (server, error) {
	var lc gatenet.ListenConfig
	lc.SetMultipathTCP(false) // plain TCP, like gnet's listener and nbio's here
	lc.KeepAlive = -1         // no keep-alive probes on accepted conns, as gnet's default
	ln, err := lc.Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &rqServer{ln: ln, q: gatenet.NewReadyQueue(), errs: make(chan error, workers+1)}

	s.wg.Go(func() { // the accept loop
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					s.errs <- fmt.Errorf("accept: %w", err)
				}
				return
			}
			s.open.Add(1)
			err = setConnCongestion(c) // checked by run: not expected to fail
			if err == nil {
				err = s.q.Add(c.(gatenet.Pollable))
			}
			if err != nil {
				c.Close()
				s.open.Add(-1)
			}
		}
	})

	for range workers {
		s.wg.Go(func() {
			noWait, cancel := context.WithCancel(context.Background())
			cancel() // a done context: a read returns what is there and never parks
			buf := make([]byte, readBuf)
			var firstErr error
			defer func() {
				if firstErr != nil {
					s.errs <- firstErr
				}
			}()
			for {
				p, err := s.q.Next(context.Background())
				if err != nil {
					return // the queue closed
				}
				c := p.(gatenet.ContextIO)
				for reads := 1; ; reads++ { // read while reads fill the buffer: more may be there
					var n int
					n, err = c.ReadContext(noWait, buf)
					if n > 0 {
						_, werr := s.q.Write(p, buf[:n]) // never parks: what waits, Next sends
						if err == nil {
							err = werr
						}
					}
					if err != nil || n < len(buf) {
						break
					}
					if reads >= maxReads && (s.q.Len() > 0 || s.q.Buffered(p) > 0) {
						break // others wait, or the client lags: hand it back
					}
				}
				switch {
				case err == nil, errors.Is(err, context.Canceled): // nothing more now
					if s.q.Add(p) != nil {
						p.Close()
						s.open.Add(-1)
					}
				default: // io.EOF: the client is done; or a read or write error
					if !isEndOfConn(err) && firstErr == nil {
						firstErr = fmt.Errorf("worker: %w", err)
					}
					s.q.CloseWhenFlushed(p) // once the last echo is out; it leaves the queue
					s.open.Add(-1)
				}
			}
		})
	}
	return s, nil
}
