//go:build linux

package reliability_test

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestCloseNoReuse: Close while another goroutine is in (or entering) Read
// must never let that Read reach a descriptor number the kernel has
// already handed to someone else. The kernel reuses the lowest free
// number at once, so a reuser goroutine keeps grabbing freed numbers with
// raw pipes holding a marker byte: a Read that touched a reused number
// would return the marker. Every such Read must end with the closed error
// and no data, round after round, for pipes and TCP conns. Bounded in
// rounds and time.
func TestCloseNoReuse(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	rounds := pick(2000, 20000)
	const bound = 5 * time.Second

	// The reuser: open raw pipes with one marker byte in each, hold them
	// briefly, close them, again and again.
	stop := make(chan struct{})
	var reuser sync.WaitGroup
	var grabbed atomic.Int64
	reuser.Add(1)
	go func() {
		defer reuser.Done()
		var held [][2]int
		for {
			select {
			case <-stop:
				for _, p := range held {
					unix.Close(p[0])
					unix.Close(p[1])
				}
				return
			default:
			}
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err == nil {
				unix.Write(p[1], []byte{'!'})
				held = append(held, p)
				grabbed.Add(1)
			}
			if len(held) >= 8 {
				for _, p := range held {
					unix.Close(p[0])
					unix.Close(p[1])
				}
				held = held[:0]
			}
			runtime.Gosched()
		}
	}()
	defer func() {
		close(stop)
		reuser.Wait()
	}()

	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()

	start := time.Now()
	done := 0
	for ; done < rounds && time.Since(start) < bound; done++ {
		var r, other io.Closer
		var reader io.Reader
		if done%2 == 0 {
			pr, pw, err := gatenet.Pipe()
			require.NoError(t, err)
			r, reader, other = pr, pr, pw
		} else {
			c, err := gatenet.Dial("tcp4", ln.Addr().String())
			require.NoError(t, err)
			s, err := ln.Accept()
			if err != nil {
				c.Close()
				require.NoError(t, err)
			}
			r, reader, other = c, c, s
		}
		res := make(chan error, 1)
		var got []byte
		go func() {
			b := make([]byte, 16)
			for {
				n, err := reader.Read(b)
				got = append(got, b[:n]...)
				if err != nil {
					res <- err
					return
				}
			}
		}()
		// Close at a different point of the reader's path each round:
		// before it starts, while it enters read(2), after it parks.
		for range done % 7 {
			runtime.Gosched()
		}
		require.NoError(t, r.Close())
		err := <-res
		other.Close()
		require.Empty(t, got, "round %d: a Read racing Close returned data (a reused descriptor's?)", done)
		require.True(t, errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed),
			"round %d: Read racing Close: %v", done, err)
	}
	t.Logf("%d rounds in %v; the reuser opened %d pipes", done, time.Since(start).Round(time.Millisecond), grabbed.Load())
}
