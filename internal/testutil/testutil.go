//go:build linux

// Package testutil holds the helpers gatenet's tests share: leak checks
// (goroutines and open descriptors), a watchdog that dumps goroutines on a
// hang, and the list of poller strategies every poller test runs under.
package testutil

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/envconf"
	"github.com/gatenet/gatenet/pollfd"
)

// VerifyTestMain runs the package's tests and fails if any goroutine leaked.
// Call it from TestMain.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// StartPollers starts gatenet's default poller and the Go runtime's (which
// net, os/exec and net-side servers use). Both create their epoll
// descriptors on first use and keep them for the life of the process:
// started before any test runs, they are not counted by CheckLeaks against
// whichever test happens to use them first. Call it from TestMain.
//
// A test process run with an invalid GATENET_ variable (to test that
// error) gets it from Pipe; then no descriptor can be registered anyway.
func StartPollers() {
	r, w, err := gatenet.Pipe()
	if _, ok := errors.AsType[*envconf.Error](err); ok {
		return
	}
	if err != nil {
		panic(err)
	}
	r.Close()
	w.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln.Close()
}

// WaitPollerIdle waits until p has no descriptor registered and no drain
// loop running (a drain loop exits shortly after the last Close:
// pollfd/drain.go), failing the test after a minute.
func WaitPollerIdle(t testing.TB, p *pollfd.Poller) {
	t.Helper()
	limit := time.Now().Add(time.Minute)
	for st := p.Stats(); st.Registered != 0 || st.DrainLoops != 0; st = p.Stats() {
		if time.Now().After(limit) {
			t.Fatalf("poller still has %d descriptors registered and %d drain loops running", st.Registered, st.DrainLoops)
		}
		time.Sleep(time.Millisecond)
	}
}

// OpenFDs counts this process's open descriptors (/proc/self/fd, less the
// one used to read it).
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	return len(ents) - 1
}

// InheritedFDs returns the descriptors of this process that a child it
// starts inherits: 0, 1, 2 and every other one without close-on-exec (a
// test harness's, for one), by number as /proc/self/fd names them.
func InheritedFDs(t testing.TB) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	fds := map[string]bool{"0": true, "1": true, "2": true}
	for _, e := range ents {
		fd, _ := strconv.Atoi(e.Name())
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC == 0 {
			fds[e.Name()] = true
		}
	}
	return fds
}

// CheckLeaks records the open-descriptor count now and, when the test ends,
// fails if it has grown or if goroutines started by the test are still
// running. Descriptors and goroutines are given a few seconds to go, since
// finalizers and timer callbacks run asynchronously.
func CheckLeaks(t testing.TB) {
	t.Helper()
	before := OpenFDs(t)
	// The goroutines running now are not the test's: snapshot them here.
	// (Taken in the cleanup, the snapshot would include the leaks.)
	preexisting := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		deadline := time.Now().Add(5 * time.Second)
		after := OpenFDs(t)
		for after > before && time.Now().Before(deadline) {
			runtime.GC()
			time.Sleep(20 * time.Millisecond)
			after = OpenFDs(t)
		}
		if after > before {
			t.Errorf("descriptor leak: %d open before the test, %d after", before, after)
		}
		// goleak alone looks for about 0.4 s; a loaded machine can hold
		// an exiting goroutine (a drain loop's linger) longer than that.
		for goleak.Find(preexisting) != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		goleak.VerifyNone(t, preexisting)
	})
}

// Watchdog fails the test with a dump of every goroutine if it is still
// running after d. It is a hang detector, not a timing assertion: give it
// minutes, not milliseconds.
func Watchdog(t testing.TB, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	timer := time.AfterFunc(d, func() {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		select {
		case <-done:
			return
		default:
		}
		// Fatal from a non-test goroutine is not allowed; print and panic
		// so the hang cannot go unnoticed.
		os.Stderr.Write(buf)
		panic("testutil: watchdog: test " + t.Name() + " still running after " + d.String())
	})
	t.Cleanup(func() {
		close(done)
		timer.Stop()
	})
}

// Strategies lists every poller configuration the poller suite runs under.
func Strategies() []pollfd.Options {
	return []pollfd.Options{
		{Strategy: pollfd.Dedicated},
		{Strategy: pollfd.Dedicated, Harvest: true},
		{Strategy: pollfd.Nested},
		{Strategy: pollfd.Nested, Harvest: true},
		{Strategy: pollfd.Nested, Harvest: true, Shards: 2},
		{Strategy: pollfd.Nested, Harvest: true, RuntimePark: true},
	}
}

// NewPoller creates a poller for t with opts and closes it when t ends.
func NewPoller(t testing.TB, opts pollfd.Options) *pollfd.Poller {
	t.Helper()
	p, err := pollfd.New(opts)
	if err != nil {
		t.Fatalf("pollfd.New(%v): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("closing poller %v: %v", opts, err)
		}
	})
	return p
}

// RunChild runs the test named test of this test binary in a child
// process, with env added to this process's environment, fails t unless
// it passes (so a child test that skips fails it too), and returns what it
// printed. The child test tells that it is one by a variable in env.
func RunChild(t testing.TB, test string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v", "-test.timeout=100s")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child %s: %v\n%s", test, err, out)
	}
	if !strings.Contains(string(out), "--- PASS: "+test+" ") {
		t.Fatalf("child %s did not pass:\n%s", test, out)
	}
	return string(out)
}

// EachStrategy runs fn once per poller strategy (Strategies), in its own
// subtest, with leak checks and a fresh poller closed when the subtest
// ends.
func EachStrategy(t *testing.T, fn func(t *testing.T, p *pollfd.Poller)) {
	t.Helper()
	for _, o := range Strategies() {
		t.Run(o.String(), func(t *testing.T) {
			CheckLeaks(t)
			fn(t, NewPoller(t, o))
		})
	}
}

// SetsockoptInt sets the int socket option (level, opt) to value on c's
// descriptor, failing t on an error.
func SetsockoptInt(t testing.TB, c syscall.Conn, level, opt, value int) {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatalf("SyscallConn: %v", err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, value) }); err != nil {
		t.Fatalf("Control: %v", err)
	}
	if serr != nil {
		t.Fatalf("setsockopt(%d, %d, %d): %v", level, opt, value, serr)
	}
}
