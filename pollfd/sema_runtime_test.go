//go:build linux && !race

package pollfd_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestParkReportsIOWait: a waiter parked on its gate shows in a goroutine
// dump as "IO wait", as one parked in net does. It pins down the wait
// reason sema_runtime.go hands the runtime by number: a toolchain that
// renumbered its reasons would make this fail rather than mislabel dumps.
func TestParkReportsIOWait(t *testing.T) {
	testutil.CheckLeaks(t)
	opts := pollfd.DefaultOptions()
	opts.RuntimePark = false // the gate's own park, not a park slot's
	p, err := pollfd.New(opts)
	require.NoError(t, err)
	defer p.Close()
	var fds [2]int
	require.NoError(t, unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
	defer unix.Close(fds[1])
	d, err := p.Open(fds[0])
	require.NoError(t, err)
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	done := make(chan error, 1)
	go func() { done <- d.Wait(pollfd.ModeRead) }()

	var dump string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		buf := make([]byte, 1<<20)
		all := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(all, "\n\n") {
			if strings.Contains(g, "pollfd.(*parkSema).park") {
				dump = g
			}
		}
		if dump != "" {
			break
		}
	}
	require.NotEmpty(t, dump, "the waiter never parked")
	header := strings.SplitN(dump, "\n", 2)[0]
	require.Contains(t, header, "[IO wait", "the parked waiter's state")

	_, err = unix.Write(fds[1], []byte{1})
	require.NoError(t, err)
	require.NoError(t, <-done)
	d.Unblock()
	require.NoError(t, d.Close())
	unix.Close(fds[0])
}
