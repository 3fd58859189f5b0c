//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
)

// Listen is net.Listen: the listener and the conns it accepts are gatenet's.
func ExampleListen() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "hello from %T", c)
	}()

	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	msg, err := io.ReadAll(c)
	<-done
	fmt.Println(string(msg), err)
	// Output: hello from *gatenet.TCPConn <nil>
}

// A Dialer is net.Dialer; DialContext honours the context's deadline.
func ExampleDialer_DialContext() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()

	d := gatenet.Dialer{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println(c.RemoteAddr().String() == ln.Addr().String(), s.RemoteAddr().String() == c.LocalAddr().String())
	// Output: true true
}

// WaitRead parks until the conn is readable without a buffer and consumes
// nothing; a Read then takes the data.
func ExampleTCPConn_WaitRead() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	c.Write([]byte("ping"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.(*gatenet.TCPConn).WaitRead(ctx)
	fmt.Println("readable:", err)
	buf := make([]byte, 4)
	n, _ := io.ReadFull(s, buf)
	fmt.Println(string(buf[:n]))
	// Output:
	// readable: <nil>
	// ping
}

// ReadContext bounds one Read by a context, with no goroutine or timer per
// call; after a cancellation the conn stays usable.
func ExampleTCPConn_ReadContext() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	conn := s.(*gatenet.TCPConn)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	buf := make([]byte, 8)
	_, err = conn.ReadContext(ctx, buf)
	fmt.Println(errors.Is(err, context.Canceled))
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		fmt.Println("*net.OpError", opErr.Op)
	}

	c.Write([]byte("still ok"))
	n, err := io.ReadFull(conn, buf)
	fmt.Println(string(buf[:n]), err)
	// Output:
	// true
	// *net.OpError read
	// still ok <nil>
}

// The worker loop to copy: one goroutine accepts and adds each conn to a
// ReadyQueue; workers take readable conns from Next, read without ever
// parking (ReadContext with a context already done), echo, read again
// while reads fill the buffer, and hand the conn back with Add; at io.EOF
// (or an error) they close it and do not add it again. Several workers may
// share the queue. Their Next takes context.Background() — closing the
// queue is what stops them — which is the queue's fastest wait.
func ExampleReadyQueue() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	q := gatenet.NewReadyQueue()
	var wg sync.WaitGroup
	defer wg.Wait()  // 3: the goroutines are gone
	defer q.Close()  // 2: wakes the workers' Next with net.ErrClosed
	defer ln.Close() // 1: ends the accept loop

	wg.Add(1)
	go func() { // the accept loop
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener closed
			}
			if err := q.Add(c.(gatenet.Pollable)); err != nil {
				c.Close()
			}
		}
	}()

	served := make(chan struct{}, 3) // a conn at EOF, closed by a worker
	for range 2 {                    // the workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			noWait, cancel := context.WithCancel(context.Background())
			cancel() // a done context: a read returns what is there and never parks
			buf := make([]byte, 4096)
			for {
				p, err := q.Next(context.Background()) // never done: the fastest wait
				if err != nil {
					return // the queue closed
				}
				c := p.(gatenet.ContextIO)
				for reads := 1; ; reads++ { // while reads fill buf more may be there
					var n int
					n, err = c.ReadContext(noWait, buf)
					if n > 0 {
						_, werr := q.Write(p, buf[:n]) // never parks: what waits, Next sends
						if err == nil {
							err = werr
						}
					}
					if err != nil || n < len(buf) {
						break // a short read took all there was: Add costs no system call
					}
					if reads >= 16 && (q.Len() > 0 || q.Buffered(p) > 0) {
						break // others wait, or the peer lags: hand it back, for fairness
					}
				}
				switch {
				case err == nil, errors.Is(err, context.Canceled): // nothing more now
					if q.Add(p) != nil {
						p.Close()
					}
				default: // io.EOF: the peer is done; or a read or write error
					q.CloseWhenFlushed(p) // once the last echo is out; it leaves the queue
					served <- struct{}{}
				}
			}
		}()
	}

	for i := range 3 { // the clients
		c, err := gatenet.Dial("tcp", ln.Addr().String())
		if err != nil {
			fmt.Println(err)
			return
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		msg := fmt.Sprintf("hello %d", i)
		c.Write([]byte(msg))
		buf := make([]byte, len(msg))
		_, err = io.ReadFull(c, buf)
		fmt.Println(string(buf), err)
		c.Close()
	}
	for range 3 {
		<-served
	}
	fmt.Println("3 conns served and closed")
	// Output:
	// hello 0 <nil>
	// hello 1 <nil>
	// hello 2 <nil>
	// 3 conns served and closed
}

// InjectFaults attaches faults to one descriptor: here reads of at most
// 2 bytes on a pipe's read end. The data is intact, in more reads.
func ExampleInjectFaults() {
	r, w, err := gatenet.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	f := faults.New(7, faults.Slicer{Min: 1, Max: 2, Dir: faults.Read})
	if err := gatenet.InjectFaults(r, f); err != nil {
		fmt.Println(err)
		w.Close()
		return
	}
	w.Write([]byte("hello, faults"))
	w.Close()

	reads := 0
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := r.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			break
		}
		reads++
	}
	fmt.Printf("%q, at most 2 bytes a read: %v\n", got, reads >= 7) // 13 bytes
	// f in GATENET_FAULTS's syntax, the spec that replays it:
	fmt.Println(f)
	// Output:
	// "hello, faults", at most 2 bytes a read: true
	// seed=7;slicer.read=1-2
}

// ListenGroup: n SO_REUSEPORT listeners on one port, one accept loop
// each; the kernel spreads the connections across them.
func ExampleListenGroup() {
	lns, err := gatenet.ListenGroup(context.Background(), "tcp", "127.0.0.1:0", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	addr := lns[0].Addr().String()
	fmt.Println(len(lns), "listeners, same address:", lns[1].Addr().String() == addr)

	accepted := make(chan net.Conn)
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Go(func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- c
			}
		})
	}
	for range 4 {
		c, err := gatenet.Dial("tcp", addr)
		if err != nil {
			fmt.Println(err)
			break
		}
		c.Close()
		s := <-accepted
		s.Close()
	}
	for _, ln := range lns {
		ln.Close()
	}
	wg.Wait()
	fmt.Println("4 accepted")
	// Output:
	// 2 listeners, same address: true
	// 4 accepted
}

// ListenPacket: a UDP echo server and a client, both gatenet's.
func ExampleListenPacket() {
	pc, err := gatenet.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pc.Close()
	pc.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // echo one datagram
		buf := make([]byte, 1500)
		n, from, err := pc.ReadFrom(buf)
		if err == nil {
			pc.WriteTo(buf[:n], from)
		}
	}()

	c, err := gatenet.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("ping"))
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	fmt.Printf("%T %s %v\n", c, buf[:n], err)
	// Output: *gatenet.UDPConn ping <nil>
}

// Passing a descriptor over a Unix socket: WriteMsgUnix with SCM_RIGHTS,
// ReadMsgUnix, and ParseUnixControl, which owns the received descriptors
// until it returns them (on an error it closes them all).
func ExampleParseUnixControl() {
	dir, err := os.MkdirTemp("", "gatenet-unix")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ln, err := gatenet.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock"), Net: "unix"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	c, err := gatenet.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	s, err := ln.AcceptUnix()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// Send the read end of a pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pw.Close()
	_, _, err = c.WriteMsgUnix([]byte("a pipe"), unix.UnixRights(int(pr.Fd())), nil)
	pr.Close() // the receiver has its own descriptor now
	if err != nil {
		fmt.Println(err)
		return
	}

	buf, oob := make([]byte, 64), make([]byte, unix.CmsgSpace(4))
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, oobn, flags, _, err := s.ReadMsgUnix(buf, oob)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctl, err := gatenet.ParseUnixControl(oob[:oobn], flags)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d descriptor\n", buf[:n], len(ctl.Rights))
	got := gatenet.NewFile(uintptr(ctl.Rights[0]), "received") // owns it now
	defer got.Close()
	pw.Write([]byte("through the passed pipe"))
	got.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err = got.Read(buf)
	fmt.Println(string(buf[:n]), err)
	// Output:
	// a pipe: 1 descriptor
	// through the passed pipe <nil>
}

// AcceptContext bounds one Accept by a context; a context's end gives the
// accept's *net.OpError wrapping ctx.Err() (not os.ErrDeadlineExceeded),
// and the listener stays usable.
func ExampleTCPListener_AcceptContext() {
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	tl := ln.(*gatenet.TCPListener)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = tl.AcceptContext(ctx) // nobody dials
	var opErr *net.OpError
	fmt.Println(errors.As(err, &opErr) && opErr.Op == "accept",
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded))

	c, err := gatenet.Dial("tcp", ln.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := tl.AcceptContext(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Printf("accepted a %T\n", s)
	// Output:
	// true true false
	// accepted a *gatenet.TCPConn
}
