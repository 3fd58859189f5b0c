//go:build linux

package testutil

import (
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// ThreadIDs lists the process's threads (/proc/self/task).
func ThreadIDs(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("listing threads: %v", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, n)
		}
	}
	if len(tids) == 0 {
		t.Fatal("no threads in /proc/self/task")
	}
	return tids
}

// PreemptStorm sends SIGURG, the runtime's preemption signal, to every
// thread of the process in turn, about every 10 µs, until stop is called
// (at most a minute): each interrupts whatever system call its thread is
// in, as the garbage collector's preemptions do, so that a call that
// mishandles EINTR shows. The runtime handles SIGURG itself; nothing else
// sees it. Call it outside any testing/synctest bubble.
func PreemptStorm(t testing.TB) (stop func()) {
	t.Helper()
	pid := os.Getpid()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tids := ThreadIDs(t)
		limit := time.Now().Add(time.Minute)
		for sent := 0; ; sent++ {
			select {
			case <-done:
				return
			default:
			}
			if sent%256 == 0 {
				if time.Now().After(limit) {
					return
				}
				tids = ThreadIDs(t)
			}
			unix.Tgkill(pid, tids[sent%len(tids)], unix.SIGURG) // ESRCH: that thread has exited
			time.Sleep(10 * time.Microsecond)
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}
