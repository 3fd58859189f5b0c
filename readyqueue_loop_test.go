//go:build linux

package gatenet_test

// The worker loop users copy (ExampleReadyQueue), as the tests run it,
// and what that loop promises: no client takes the server down, whether
// it never reads or never stops sending.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// echoWorkers runs workers goroutines serving q as ExampleReadyQueue
// does: read without parking, echo with q.Write (never parking either),
// hand back with Add, close at EOF or an error. closed counts the conns
// they closed. Stop closes q and waits for them.
type echoWorkers struct {
	q      *gatenet.ReadyQueue
	wg     sync.WaitGroup
	closed atomic.Int64
	turns  atomic.Int64 // conns Next handed them that had bytes to read (a stale report's has none)
}

func startEchoWorkers(q *gatenet.ReadyQueue, workers, readBuf int) *echoWorkers {
	w := &echoWorkers{q: q}
	noWait, cancel := context.WithCancel(context.Background())
	cancel()
	for range workers {
		w.wg.Go(func() {
			buf := make([]byte, readBuf)
			for {
				p, err := q.Next(context.Background())
				if err != nil {
					return
				}
				c := p.(gatenet.ContextIO)
				for reads := 1; ; reads++ {
					var n int
					n, err = c.ReadContext(noWait, buf)
					if n > 0 && reads == 1 {
						w.turns.Add(1)
					}
					if n > 0 {
						if _, werr := q.Write(p, buf[:n]); err == nil {
							err = werr
						}
					}
					if err != nil || n < len(buf) {
						break
					}
					if reads >= 16 && (q.Len() > 0 || q.Buffered(p) > 0) {
						break
					}
				}
				switch {
				case err == nil, errors.Is(err, context.Canceled):
					if q.Add(p) == nil {
						continue
					}
					p.Close()
				default:
					q.CloseWhenFlushed(p)
				}
				w.closed.Add(1)
			}
		})
	}
	return w
}

func (w *echoWorkers) Stop() {
	w.q.Close()
	w.wg.Wait()
}

// residentBytes is /proc/self/statm's resident set.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	require.NoError(t, err)
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	return pages * int64(os.Getpagesize())
}

// TestReadyQueueClientsThatNeverRead is the stall of issue 40: two clients
// send and never read, on a two-worker queue. With blocking writes both
// workers park on their full send buffers and every other client waits for
// good; with q.Write the workers keep serving, the two hold at most the
// output limit (plus one turn's reads) each, and their own writes block
// once the server stops reading them.
func TestReadyQueueClientsThatNeverRead(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	const (
		limit   = 64 << 10
		readBuf = 16 << 10
		turn    = 16 * readBuf // what one worker's turn may write past the limit
		normal  = 50
		trips   = 20
	)
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	q := gatenet.NewReadyQueue()
	require.NoError(t, q.SetOutputLimit(limit))
	var (
		mu       sync.Mutex
		accepted = map[string]gatenet.Pollable{} // by the client's address
		acc      sync.WaitGroup
	)
	acc.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepted[c.RemoteAddr().String()] = c.(gatenet.Pollable)
			mu.Unlock()
			if q.Add(c.(gatenet.Pollable)) != nil {
				c.Close()
			}
		}
	})
	workers := startEchoWorkers(q, 2, readBuf)
	defer func() {
		ln.Close()
		acc.Wait()
		workers.Stop()
		mu.Lock()
		for _, p := range accepted {
			p.Close()
		}
		mu.Unlock()
	}()

	rssBefore := residentBytes(t)
	// The clients that never read: each writes until a write makes no
	// progress for a second (the server stopped reading it), or 256 MiB.
	const most = 256 << 20
	hostile := make([]net.Conn, 2)
	var sent [2]int64
	var hw sync.WaitGroup
	for i := range hostile {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		hostile[i] = c
		hw.Go(func() {
			chunk := make([]byte, 64<<10)
			for sent[i] < most {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				n, err := c.Write(chunk)
				sent[i] += int64(n)
				if err != nil {
					return
				}
			}
		})
	}

	// The normal clients, meanwhile: every one is served.
	var nw sync.WaitGroup
	errs := make(chan error, normal)
	for i := range normal {
		nw.Go(func() {
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Minute))
			msg := bytes.Repeat([]byte{byte(i)}, 1024)
			got := make([]byte, len(msg))
			for range trips {
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, got); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, msg) {
					errs <- fmt.Errorf("client %d: echo differs", i)
					return
				}
			}
		})
	}
	nw.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	hw.Wait()
	rssAfter := residentBytes(t)

	for i, c := range hostile {
		require.Less(t, sent[i], int64(most), "client %d was never held back", i)
		mu.Lock()
		p := accepted[c.LocalAddr().String()]
		mu.Unlock()
		require.NotNil(t, p)
		held := q.Buffered(p)
		t.Logf("client %d sent %d KiB before its writes blocked; the server holds %d KiB for it", i, sent[i]>>10, held>>10)
		require.LessOrEqual(t, held, limit+2*turn)
	}
	t.Logf("resident set %d MiB before the two clients, %d MiB after (%+d MiB)",
		rssBefore>>20, rssAfter>>20, (rssAfter-rssBefore)>>20)
	require.Less(t, rssAfter-rssBefore, int64(64<<20))
}

// TestReadyQueueLoopHandsBack: the loop hands back a conn whose reads
// keep filling the buffer, after 16 of them, only while another report
// waits or the conn's own output does. The clients' bytes are queued on
// the server's sockets before the one worker starts, so every read of the
// stream is full until its last:
//   - alone, the stream takes one turn;
//   - with a report waiting behind it, the worker serves that one after
//     16 reads and comes back for the rest;
//   - with its client not reading the echo, which the server's small send
//     buffer cannot hold, the stream goes back every 16 reads.
func TestReadyQueueLoopHandsBack(t *testing.T) {
	const (
		readBuf = 512
		stream  = 128 * readBuf // 64 KiB: queued at once on a Unix socket
	)
	for _, tc := range []string{"alone", "other waits", "echo waits"} {
		t.Run(tc, func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 2*time.Minute)
			ln, err := gatenet.Listen("unix", t.TempDir()+"/s")
			require.NoError(t, err)
			defer ln.Close()
			q := gatenet.NewReadyQueue()
			connect := func(msg []byte) (c, s net.Conn) {
				c, err := net.Dial("unix", ln.Addr().String())
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				s, err = ln.Accept()
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				if tc == "echo waits" {
					require.NoError(t, s.(*gatenet.UnixConn).SetWriteBuffer(1)) // the kernel's least
				}
				c.SetDeadline(time.Now().Add(time.Minute))
				_, err = c.Write(msg) // all of it queued on s before Add
				require.NoError(t, err)
				require.NoError(t, q.Add(s.(gatenet.Pollable))) // Add probes: reported now
				return c, s
			}
			data := bytes.Repeat([]byte("0123456789abcdef"), stream/16)
			sc, ss := connect(data)
			msg := []byte("are you there?")
			var oc net.Conn
			if tc == "other waits" {
				oc, _ = connect(msg)
			}

			workers := startEchoWorkers(q, 1, readBuf)
			defer workers.Stop()
			if tc == "echo waits" { // the server read it all before its client reads
				require.Eventually(t, func() bool { return zcQueue(t, ss, unix.SIOCINQ) == 0 },
					time.Minute, time.Millisecond)
				require.Positive(t, q.Buffered(ss.(gatenet.Pollable)))
				require.GreaterOrEqual(t, workers.turns.Load(), int64(stream/readBuf/16/2),
					"turns the worker took while the echo waited")
			}
			got := make([]byte, stream)
			_, err = io.ReadFull(sc, got)
			require.NoError(t, err)
			require.Equal(t, data, got)
			switch tc {
			case "alone":
				require.Equal(t, int64(1), workers.turns.Load(), "turns the worker took")
			case "other waits":
				got := make([]byte, len(msg))
				_, err = io.ReadFull(oc, got)
				require.NoError(t, err)
				require.Equal(t, msg, got)
				require.Equal(t, int64(3), workers.turns.Load(), "turns the worker took")
			}
		})
	}
}
