//go:build linux

package testutil

import (
	"errors"
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
	tids, err := threadIDs()
	if err != nil {
		t.Fatal(err)
	}
	return tids
}

func threadIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, n)
		}
	}
	if len(tids) == 0 {
		return nil, errors.New("no threads in /proc/self/task")
	}
	return tids, nil
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
	tids := ThreadIDs(t)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
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
				var err error
				if tids, err = threadIDs(); err != nil {
					return // the storm ends; the test goes on without it
				}
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
