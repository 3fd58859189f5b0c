//go:build linux

package testutil

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// InEpollSet reports whether fd is in the epoll set of one of the epoll
// descriptors isPoller accepts (a poller's IsPollDescriptor), as the
// kernel lists them in /proc/self/fdinfo ("tfd:" lines). It fails the
// test if isPoller accepts no epoll descriptor at all.
func InEpollSet(t testing.TB, isPoller func(int) bool, fd int) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	found, sets := false, 0
	want := strconv.Itoa(fd)
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || !isPoller(n) {
			continue
		}
		if link, _ := os.Readlink("/proc/self/fd/" + e.Name()); link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		sets++
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" && f[1] == want {
				found = true
			}
		}
	}
	if sets == 0 {
		t.Fatalf("no epoll descriptor of the poller found in /proc/self/fd")
	}
	return found
}
