//go:build linux

package reliability_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	"github.com/gatenet/gatenet/pollfd"
)

// Signals: a storm of process- and thread-directed signals while
// thousands of waiters are parked in gatenet (pipes and TCP conns, in Read
// and in WaitRead) and the drain loop waits in epoll_wait. Signals are not
// readiness: nobody may wake for them, and afterwards each waiter must get
// exactly the one message written to it.
//
// Pipes always use the default poller, so each strategy runs in a
// re-executed child whose default poller is set by GATENET_POLLER and
// GATENET_SHARDS (the child is TestSignalStormChild).

const signalWatchdog = 2 * time.Minute

func TestSignalStorm(t *testing.T) {
	for _, opts := range testutil.Strategies() {
		// GATENET_POLLER takes the String form without its "/N-shards"
		// (GATENET_SHARDS says that).
		name, _, _ := strings.Cut(opts.String(), "/")
		shards := max(opts.Shards, 1)
		t.Run(fmt.Sprintf("%s/%d-shards", name, shards), func(t *testing.T) {
			testutil.CheckLeaks(t)
			testutil.Watchdog(t, signalWatchdog)
			out := testutil.RunChild(t, "TestSignalStormChild",
				"GATENET_SIGNAL_CHILD=1",
				"GATENET_POLLER="+name,
				"GATENET_SHARDS="+strconv.Itoa(shards),
				"GATENET_SIGNAL_WANT="+opts.String())
			require.Contains(t, out, "SIGNALS-OK", "child did not report success:\n%s", out)
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "storm:") {
					t.Log(strings.TrimSpace(line))
				}
			}
		})
	}
}

// stormWaiter is one parked waiter: the end it waits on and the end the
// test writes its message to.
type stormWaiter struct {
	r    io.ReadCloser
	w    io.WriteCloser
	wait func(context.Context) error // non-nil: WaitRead, then Read
}

type stormResult struct {
	i    int
	data []byte
	err  error
}

// TestSignalStormChild is TestSignalStorm's child; it skips unless
// re-executed.
func TestSignalStormChild(t *testing.T) {
	if os.Getenv("GATENET_SIGNAL_CHILD") != "1" {
		t.Skip("runs only as TestSignalStorm's child")
	}
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, signalWatchdog)
	const (
		waiters    = 2000 // half pipes, half TCP; half of each in Read, half in WaitRead
		stormFor   = 300 * time.Millisecond
		stormMax   = 5 * time.Second // dedicated: storm on until the drain thread saw EINTR
		maxSignals = 1_000_000
		msgLen     = 8
	)
	p := pollfd.Default()
	require.Equal(t, os.Getenv("GATENET_SIGNAL_WANT"), p.Options().String(), "the child's default poller")

	// SIGUSR1 would kill the process unless caught; SIGURG is the
	// runtime's own preemption signal and harmless.
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, unix.SIGUSR1)
	stopDrain := make(chan struct{})
	var drained sync.WaitGroup
	var caught atomic.Int64
	drained.Add(1)
	go func() {
		defer drained.Done()
		for {
			select {
			case <-sigs:
				caught.Add(1)
			case <-stopDrain:
				return
			}
		}
	}()
	defer func() {
		signal.Stop(sigs)
		close(stopDrain)
		drained.Wait()
	}()

	// The waiters' descriptors.
	ws := make([]stormWaiter, 0, waiters)
	closeAll := func() {
		for _, w := range ws {
			w.r.Close()
			w.w.Close()
		}
	}
	defer closeAll()
	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	for i := 0; i < waiters; i++ {
		var w stormWaiter
		if i%2 == 0 {
			r, wr, err := gatenet.Pipe()
			require.NoError(t, err)
			w = stormWaiter{r: r, w: wr}
			if i%4 == 2 {
				w.wait = r.WaitRead
			}
		} else {
			c, err := gatenet.Dial("tcp4", ln.Addr().String())
			require.NoError(t, err)
			s, err := ln.Accept()
			if err != nil {
				c.Close()
				require.NoError(t, err)
			}
			w = stormWaiter{r: c, w: s}
			if i%4 == 3 {
				w.wait = c.(*gatenet.TCPConn).WaitRead
			}
		}
		ws = append(ws, w)
	}
	require.NoError(t, ln.Close())

	// Park them all.
	base := p.Stats()
	results := make(chan stormResult, waiters)
	var running sync.WaitGroup
	for i, w := range ws {
		running.Add(1)
		go func() {
			defer running.Done()
			if w.wait != nil {
				if err := w.wait(context.Background()); err != nil {
					results <- stormResult{i: i, err: fmt.Errorf("WaitRead: %w", err)}
					return
				}
			}
			buf := make([]byte, msgLen)
			n, err := io.ReadFull(w.r, buf)
			results <- stormResult{i: i, data: buf[:n], err: err}
		}()
	}
	defer running.Wait()
	for p.Stats().Parks-base.Parks < waiters {
		select {
		case r := <-results:
			t.Fatalf("waiter %d returned before any data: %v", r.i, r.err)
		case <-time.After(time.Millisecond):
		}
	}
	parked := p.Stats()

	// The storm: process-directed SIGUSR1 and SIGURG (the kernel picks a
	// thread that does not block them, often one sleeping in a system
	// call) and thread-directed ones to every thread in turn, the drain
	// thread included. Bounded in time and in count.
	pid := os.Getpid()
	tids := testutil.ThreadIDs(t)
	sent := 0
	needEINTR := p.Options().Strategy == pollfd.Dedicated
	start := time.Now()
	for sent < maxSignals {
		if sent%64 == 0 {
			elapsed := time.Since(start)
			if elapsed >= stormMax || elapsed >= stormFor && (!needEINTR || p.Stats().EINTR > base.EINTR) {
				break
			}
			if sent%4096 == 0 {
				tids = testutil.ThreadIDs(t)
			}
		}
		sig := unix.SIGUSR1
		if sent%2 == 1 {
			sig = unix.SIGURG
		}
		if sent%3 == 0 {
			err = unix.Kill(pid, sig)
		} else {
			err = unix.Tgkill(pid, tids[sent%len(tids)], sig)
			if err == unix.ESRCH { // that thread has exited
				err = nil
			}
		}
		require.NoError(t, err)
		sent++
	}
	stormed := time.Since(start)

	// Nobody woke: a signal is not readiness.
	select {
	case r := <-results:
		t.Fatalf("waiter %d returned during the storm: %q, %v", r.i, r.data, r.err)
	default:
	}
	during := p.Stats()

	// Exactly one message to each, then every waiter must have its own.
	msg := func(i int) []byte {
		b := make([]byte, msgLen)
		binary.BigEndian.PutUint64(b, uint64(i)*0x9e3779b97f4a7c15)
		return b
	}
	for i, w := range ws {
		_, err := w.w.Write(msg(i))
		require.NoError(t, err, "writing to waiter %d", i)
	}
	got := make([]bool, waiters)
	for range waiters {
		r := <-results
		require.NoError(t, r.err, "waiter %d", r.i)
		require.Equal(t, msg(r.i), r.data, "waiter %d's message", r.i)
		require.False(t, got[r.i], "waiter %d twice", r.i)
		got[r.i] = true
	}
	running.Wait()
	closeAll()
	ws = nil

	end := p.Stats()
	eintr := end.EINTR - base.EINTR
	fmt.Printf("storm: %s: %d waiters, %d signals (%d caught) in %v; EINTR retries %d; wakeups during the storm %d (events %d); epoll_waits %d\n",
		p.Options(), waiters, sent, caught.Load(), stormed.Round(time.Millisecond), eintr,
		during.Wakeups-parked.Wakeups, during.Events-parked.Events, end.EpollWaits-base.EpollWaits)
	if needEINTR {
		// The drain thread sits in epoll_wait(-1) throughout and gets
		// thread-directed signals of its own: it must have seen (and
		// retried) an EINTR.
		require.Positive(t, eintr, "the dedicated drain thread never saw EINTR")
	}
	fmt.Println("SIGNALS-OK")
}
