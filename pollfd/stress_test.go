//go:build linux

package pollfd_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestNoLostWakeup: edge-triggered readiness loses nothing. A writer pushes
// many small messages of random sizes through a pipe, waiting for
// writability whenever the pipe is full; a reader drains it with reads of
// random sizes, waiting for readability whenever it is empty. Both follow
// internal/poll's loop (Prepare, then syscall, EAGAIN → Wait). A lost
// wake-up hangs one side (the watchdog reports it); a misordered or
// duplicated delivery changes the running SHA-256, which must match.
func TestNoLostWakeup(t *testing.T) {
	msgs := 200_000
	if testing.Short() {
		msgs = 50_000
	}
	// Message bodies are slices of one random block.
	block := make([]byte, 1<<20)
	src := rand.NewChaCha8([32]byte{1, 2, 3})
	src.Read(block)

	for _, o := range testutil.Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, 3*time.Minute)
			p := testutil.NewPoller(t, o)
			pp := newPipePair(t)
			r := pp[0]
			// The smallest pipe (one page) makes both sides hit EAGAIN,
			// and so wait for an edge, as often as possible.
			_, err := unix.FcntlInt(uintptr(pp[1]), unix.F_SETPIPE_SZ, 4096)
			require.NoError(t, err)
			dr := open(t, p, r)
			dw, err := p.Open(pp[1]) // closed by the writer when it is done
			require.NoError(t, err)

			start := time.Now()
			type result struct {
				sum   [sha256.Size]byte
				bytes int64
				waits int
				err   error
			}
			wrote := make(chan result, 1)
			go func() {
				var res result
				defer func() { wrote <- res }()
				h := sha256.New()
				rng := rand.New(rand.NewPCG(uint64(o.Strategy), 7))
				for i := 0; i < msgs; i++ {
					size := 1 + rng.IntN(512)
					off := rng.IntN(len(block) - size)
					msg := block[off : off+size]
					h.Write(msg)
					res.bytes += int64(size)
					if err := dw.Prepare(pollfd.ModeWrite); err != nil {
						res.err = fmt.Errorf("message %d: Prepare: %w", i, err)
						return
					}
					for len(msg) > 0 {
						n, err := unix.Write(pp[1], msg)
						if errors.Is(err, unix.EAGAIN) {
							res.waits++
							if err := dw.Wait(pollfd.ModeWrite); err != nil {
								res.err = fmt.Errorf("message %d: Wait: %w", i, err)
								return
							}
							continue
						}
						if err != nil {
							res.err = fmt.Errorf("message %d: write: %w", i, err)
							return
						}
						msg = msg[n:]
					}
				}
				copy(res.sum[:], h.Sum(nil))
				// End of stream: the reader sees EOF (by EPOLLHUP).
				dw.Unblock()
				if err := dw.Close(); err != nil {
					res.err = err
				}
				if err := pp.close(1); err != nil && res.err == nil {
					res.err = err
				}
			}()

			h := sha256.New()
			rng := rand.New(rand.NewPCG(uint64(o.Strategy), 8))
			buf := make([]byte, 8192)
			var total int64
			readWaits := 0
		read:
			for {
				// One fd-layer Read: Prepare, then read until not EAGAIN.
				require.NoError(t, dr.Prepare(pollfd.ModeRead))
				want := buf[:1+rng.IntN(len(buf))]
				for {
					n, err := unix.Read(r, want)
					if errors.Is(err, unix.EAGAIN) {
						readWaits++
						require.NoError(t, dr.Wait(pollfd.ModeRead))
						continue
					}
					require.NoError(t, err)
					if n == 0 {
						break read
					}
					h.Write(want[:n])
					total += int64(n)
					break
				}
			}
			res := <-wrote
			require.NoError(t, res.err)
			require.Equal(t, res.bytes, total, "bytes written and read")
			require.Equal(t, res.sum[:], h.Sum(nil), "SHA-256 of the stream")
			s := p.Stats()
			require.Zero(t, s.Runnable, "woken waiters still counted as not yet run")
			t.Logf("%d messages, %d bytes in %v; writer waits %d, reader waits %d; parks %d, events %d, harvests %d",
				msgs, total, time.Since(start).Round(time.Millisecond), res.waits, readWaits,
				s.Parks, s.Events, s.Harvests)
		})
	}
}
