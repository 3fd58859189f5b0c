//go:build linux

package reliability_test

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// endpoint is what conns and pipe ends share for the torture test.
type endpoint interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
	WaitRead(context.Context) error
}

// pair is one shared connection (two TCP conns, or a pipe's two ends).
type pair struct {
	a, b endpoint // a: TCP client or pipe read end; b: TCP server or pipe write end
	tcp  bool
}

func (p *pair) close() {
	p.a.Close()
	p.b.Close()
}

func newPair(t *testing.T, tcp bool) *pair {
	if tcp {
		c, s := tcpPair(t)
		return &pair{a: c, b: s, tcp: true}
	}
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	return &pair{a: r, b: w}
}

// expected reports whether err is one a hostile but legal mix of calls may
// produce.
func expected(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, net.ErrClosed),
		errors.Is(err, os.ErrClosed),
		errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNRESET):
		return true
	}
	// *os.File's SetDeadline after Close returns internal/poll's bare
	// "use of closed file", not os.ErrClosed; gatenet.File mirrors it.
	return err.Error() == "use of closed file"
}

// TestTorture runs many goroutines mixing Read, Write, Close, SetDeadline,
// CloseWrite and WaitRead on a small set of shared TCP conns and pipes for
// a bounded time, replacing closed pairs. Only the expected errors may
// appear; nothing may hang, panic or leak.
func TestTorture(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	workers := pick(64, 500)
	const slots = 16
	dur := 2 * time.Second

	var mu sync.Mutex
	stopped := false // set with every pair closed: calls still blocked (a cleared deadline) return
	pairs := make([]*pair, slots)
	for i := range pairs {
		pairs[i] = newPair(t, i%2 == 0)
	}
	get := func(i int) *pair {
		mu.Lock()
		defer mu.Unlock()
		return pairs[i]
	}
	// replace swaps in a fresh pair for old, once: the caller has closed
	// (part of) old. The old pair is closed fully.
	replace := func(i int, old *pair) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || pairs[i] != old {
			return
		}
		old.close()
		pairs[i] = newPair(t, old.tcp)
	}

	var ops [8]atomic.Int64
	var bad atomic.Int64
	report := func(op string, p *pair, err error) {
		if !expected(err) {
			if bad.Add(1) <= 20 {
				t.Errorf("%s (tcp=%v): unexpected error %#v: %v", op, p.tcp, err, err)
			}
		}
	}
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			buf := make([]byte, 4096)
			for time.Now().Before(stop) {
				i := rng.IntN(slots)
				p := get(i)
				end := p.a
				if rng.IntN(2) == 1 {
					end = p.b
				}
				op := rng.IntN(100)
				switch {
				case op < 30: // Read, bounded by a deadline unless another goroutine clears it
					ops[0].Add(1)
					end.SetDeadline(time.Now().Add(time.Duration(rng.IntN(20)) * time.Millisecond))
					_, err := end.Read(buf[:1+rng.IntN(len(buf))])
					if p.tcp || end == p.a { // reading a pipe's write end is EBADF: skip
						report("Read", p, err)
					}
				case op < 60: // Write
					ops[1].Add(1)
					end.SetDeadline(time.Now().Add(time.Duration(rng.IntN(20)) * time.Millisecond))
					_, err := end.Write(buf[:1+rng.IntN(len(buf))])
					if p.tcp || end == p.b {
						report("Write", p, err)
					}
				case op < 75: // SetDeadline: past, near future, far future or none
					ops[2].Add(1)
					var d time.Time
					switch rng.IntN(4) {
					case 0:
						d = time.Now().Add(-time.Second)
					case 1:
						d = time.Now().Add(time.Duration(rng.IntN(5)) * time.Millisecond)
					case 2:
						d = time.Now().Add(time.Hour)
					}
					report("SetDeadline", p, end.SetDeadline(d))
				case op < 88: // WaitRead, bounded by a context
					ops[3].Add(1)
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rng.IntN(20))*time.Millisecond)
					err := end.WaitRead(ctx)
					cancel()
					if p.tcp || end == p.a {
						report("WaitRead", p, err)
					}
				case op < 94: // CloseWrite (pipes: close the write end)
					ops[4].Add(1)
					if p.tcp {
						err := end.(*gatenet.TCPConn).CloseWrite()
						// shutdown(2) on a connection the peer has reset is
						// ENOTCONN, for net too.
						if !errors.Is(err, syscall.ENOTCONN) {
							report("CloseWrite", p, err)
						}
					} else {
						report("Close(w)", p, p.b.Close())
					}
				case op < 97: // Close one end, then replace the pair
					ops[5].Add(1)
					report("Close", p, end.Close())
					replace(i, p)
				default: // replace outright
					ops[6].Add(1)
					replace(i, p)
				}
			}
		}(uint64(w))
	}
	time.Sleep(time.Until(stop))
	mu.Lock()
	stopped = true
	for _, p := range pairs {
		p.close()
	}
	mu.Unlock()
	wg.Wait()
	t.Logf("workers=%d reads=%d writes=%d deadlines=%d waitreads=%d closewrites=%d closes=%d replaces=%d",
		workers, ops[0].Load(), ops[1].Load(), ops[2].Load(), ops[3].Load(), ops[4].Load(), ops[5].Load(), ops[6].Load())
}
