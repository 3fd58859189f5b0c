//go:build linux

package main

// The gnet and nbio echo servers, each in its library's documented idiom,
// and what the workloads need of any server (readyqueue.go has the
// third).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/lesismal/nbio"
	nblog "github.com/lesismal/nbio/logging"
	"github.com/panjf2000/gnet/v2"
)

// The servers, in the order every round runs them.
const (
	serverGnet       = "gnet"
	serverNbio       = "nbio"
	serverReadyQueue = "readyqueue"
)

var serverNames = []string{serverGnet, serverNbio, serverReadyQueue}

// rqWorkers is how many worker goroutines the ReadyQueue server runs.
const rqWorkers = 2

// server is a running echo server on 127.0.0.1: every byte a client
// sends comes back to it.
type server interface {
	// Addr is where it listens, "127.0.0.1:port".
	Addr() string
	// Open is how many connections it holds now (accepted, not yet
	// closed).
	Open() int64
	// Close stops it; the workloads have closed their clients first.
	Close() error
}

// startServer starts the server called name, reading into buffers of
// readBuf bytes (gnet's per event loop, nbio's per poller, the
// ReadyQueue's per worker).
func startServer(name string, readBuf int) (server, error) {
	switch name {
	case serverGnet:
		return startGnet(readBuf)
	case serverNbio:
		return startNbio(readBuf)
	case serverReadyQueue:
		return startReadyQueue(rqWorkers, readBuf)
	}
	return nil, fmt.Errorf("unknown server %q (want %v)", name, serverNames)
}

// counter counts a server's open connections.
type counter struct{ open atomic.Int64 }

func (c *counter) Open() int64 { return c.open.Load() }

// ---- gnet ----

// gnetEcho is gnet's echo server, as its quick start and
// gnet-examples/echo write it: OnTraffic takes every buffered byte with
// c.Next(-1) and writes it back with c.Write (in the event loop, where
// Write is meant to be called).
type gnetEcho struct {
	gnet.BuiltinEventEngine
	counter
	eng    gnet.Engine
	booted chan struct{}
}

func (s *gnetEcho) OnBoot(eng gnet.Engine) gnet.Action {
	s.eng = eng
	close(s.booted)
	return gnet.None
}

func (s *gnetEcho) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	s.open.Add(1)
	if setCongestionFd(c.Fd()) != nil { // checked by run: not expected
		return nil, gnet.Close
	}
	return nil, gnet.None
}

func (s *gnetEcho) OnClose(gnet.Conn, error) gnet.Action {
	s.open.Add(-1)
	return gnet.None
}

func (s *gnetEcho) OnTraffic(c gnet.Conn) gnet.Action {
	buf, _ := c.Next(-1)
	c.Write(buf)
	return gnet.None
}

type gnetServer struct {
	*gnetEcho
	addr string
	done chan error // gnet.Run's return
}

func (s *gnetServer) Addr() string { return s.addr }

func (s *gnetServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.eng.Stop(ctx)
	select {
	case runErr := <-s.done:
		return errors.Join(err, runErr)
	case <-ctx.Done():
		return errors.Join(err, errors.New("gnet.Run did not return"))
	}
}

// startGnet runs gnet with one event loop per CPU (WithMulticore), its
// recommended set-up on a multi-core machine; TCP_NODELAY is gnet's
// default, as it is net's.
func startGnet(readBuf int) (server, error) {
	h := &gnetEcho{booted: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- gnet.Run(h, "tcp4://127.0.0.1:0",
			gnet.WithMulticore(true),
			gnet.WithReadBufferCap(readBuf),
			gnet.WithLogger(quietLogger{}))
	}()
	select {
	case <-h.booted:
	case err := <-done:
		return nil, fmt.Errorf("gnet.Run: %v", err)
	case <-time.After(30 * time.Second):
		return nil, errors.New("gnet did not boot")
	}
	s := &gnetServer{gnetEcho: h, done: done}
	// The port the kernel chose: gnet hands out a duplicate of its
	// listener's descriptor.
	fd, err := h.eng.Dup()
	if err == nil {
		var sa syscall.Sockaddr
		sa, err = syscall.Getsockname(fd)
		syscall.Close(fd)
		if in4, ok := sa.(*syscall.SockaddrInet4); ok {
			s.addr = (&net.TCPAddr{IP: in4.Addr[:], Port: in4.Port}).String()
		} else if err == nil {
			err = fmt.Errorf("gnet listens on %v", sa)
		}
	}
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// quietLogger keeps gnet's information lines off stdout, which carries a
// child's result; warnings and errors go to stderr.
type quietLogger struct{}

func (quietLogger) Debugf(string, ...any)          {}
func (quietLogger) Infof(string, ...any)           {}
func (quietLogger) Warnf(f string, args ...any)    { fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", args...) }
func (quietLogger) Errorf(f string, args ...any)   { fmt.Fprintf(os.Stderr, "gnet: "+f+"\n", args...) }
func (q quietLogger) Fatalf(f string, args ...any) { q.Errorf(f, args...); os.Exit(1) }

// ---- nbio ----

type nbioServer struct {
	counter
	eng  *nbio.Engine
	addr string
}

func (s *nbioServer) Addr() string { return s.addr }

func (s *nbioServer) Close() error {
	s.eng.Stop()
	return nil
}

// startNbio runs nbio's echo server as its README and
// nbio-examples/echo/server write it: nbio.NewEngine with its default
// Config (one poller goroutine per 4 CPUs, at least one; 64 KiB read
// buffer per poller), OnData writing the bytes back with c.Write. The
// example copies data before writing it; nbio v1.6.8's Write copies
// whatever the socket does not take at once, so the copy is left out.
// Config.Listen, nbio's hook for making the listener, is used to listen
// without Multipath TCP and with no keep-alive probes on accepted conns
// (like the other two servers: gnet's default, net's and gatenet's
// would enable them) and to learn the port.
func startNbio(readBuf int) (server, error) {
	nblog.Output = os.Stderr // off stdout, which carries a child's result
	nblog.SetLevel(nblog.LevelWarn)
	s := &nbioServer{}
	var ln net.Listener
	s.eng = nbio.NewEngine(nbio.Config{
		Network:        "tcp4",
		Addrs:          []string{"127.0.0.1:0"},
		ReadBufferSize: readBuf,
		Listen: func(network, addr string) (net.Listener, error) {
			var lc net.ListenConfig
			lc.SetMultipathTCP(false)
			lc.KeepAlive = -1 // no keep-alive probes, as gnet's default
			l, err := lc.Listen(context.Background(), network, addr)
			ln = l
			return l, err
		},
	})
	s.eng.OnOpen(func(c *nbio.Conn) {
		s.open.Add(1)
		if setConnCongestion(c) != nil { // checked by run: not expected
			c.Close()
		}
	})
	s.eng.OnClose(func(*nbio.Conn, error) { s.open.Add(-1) })
	s.eng.OnData(func(c *nbio.Conn, data []byte) {
		c.Write(data)
	})
	if err := s.eng.Start(); err != nil {
		return nil, fmt.Errorf("nbio Start: %v", err)
	}
	if ln == nil {
		s.eng.Stop()
		return nil, errors.New("nbio did not call Config.Listen")
	}
	s.addr = ln.Addr().String()
	return s, nil
}
