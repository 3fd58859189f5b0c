//go:build linux

package gatenet_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// deadlineRWC is what a conn and a File share.
type deadlineRWC interface {
	io.ReadWriteCloser
	SetDeadline(time.Time) error
}

// TestSynctestDroppedPeer: an end of a bubble's connection or pipe dropped
// without Close is closed by the collector, as net's and os's are, and
// its peer's parked Read (EOF) or Write (EPIPE) returns at once, not at
// its deadline on the fake clock (nor, with none, in a deadlock).
func TestSynctestDroppedPeer(t *testing.T) {
	testutil.CheckLeaks(t)
	stream := func(network, address string) func(t *testing.T) deadlineRWC {
		return func(t *testing.T) deadlineRWC {
			ln, err := gatenet.Listen(network, address)
			require.NoError(t, err)
			defer ln.Close()
			_, err = gatenet.Dial(network, ln.Addr().String()) // dropped
			require.NoError(t, err)
			s, err := ln.Accept()
			require.NoError(t, err)
			return s
		}
	}
	for _, c := range []struct {
		name    string
		read    bool // the kept end reads, else writes
		kept    func(t *testing.T) deadlineRWC
		wantErr error
	}{
		{"tcp", true, stream("tcp", "127.0.0.1:0"), io.EOF},
		{"unix", true, stream("unix", filepath.Join(t.TempDir(), "s")), io.EOF},
		{"pipe's writer dropped", true, func(t *testing.T) deadlineRWC {
			r, _, err := gatenet.Pipe()
			require.NoError(t, err)
			return r
		}, io.EOF},
		{"pipe's reader dropped", false, func(t *testing.T) deadlineRWC {
			_, w, err := gatenet.Pipe()
			require.NoError(t, err)
			return w
		}, syscall.EPIPE},
	} {
		t.Run(c.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				kept := c.kept(t)
				defer kept.Close()
				type result struct {
					err  error
					fake time.Duration
				}
				done := make(chan result, 1)
				go func() {
					var err error
					start := time.Now()
					if err = kept.SetDeadline(start.Add(time.Hour)); err == nil {
						if c.read {
							_, err = kept.Read(make([]byte, 1))
						}
						for !c.read && err == nil { // fill the pipe, then park
							_, err = kept.Write(make([]byte, 1<<16))
						}
					}
					done <- result{err, time.Since(start)}
				}()
				synctest.Wait() // parked, durably: the peer is the bubble's
				// The collector runs outside the bubble: wait for it on the
				// real clock, in a system call, during which the bubble's
				// clock stands still.
				for range 250 {
					select {
					case r := <-done:
						require.ErrorIs(t, r.err, c.wantErr)
						require.False(t, errors.Is(r.err, os.ErrDeadlineExceeded))
						require.Zero(t, r.fake, "returned with no fake time gone")
						return
					default:
					}
					runtime.GC()
					ts := syscall.NsecToTimespec(int64(20 * time.Millisecond))
					syscall.Nanosleep(&ts, nil)
				}
				t.Fatal("the kept end still waits 5 s after the collections")
			})
		})
	}
}
