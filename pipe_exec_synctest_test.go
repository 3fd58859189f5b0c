//go:build linux

package gatenet_test

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestSynctestChildProcessPipes: the process pipes in a bubble. What waits
// for a command's Start is outside the bubble, so the bubble's clock moves
// on between the pipes and Start, a command never started does not keep
// the bubble from ending, and a failed Start still closes the parent's
// ends before it returns.
func TestSynctestChildProcessPipes(t *testing.T) {
	childOnly(t)
	testutil.CheckLeaks(t) // collects: the command never started, its File and its watcher go
	testutil.Watchdog(t, time.Minute)
	synctest.Test(t, func(t *testing.T) {
		cmd := child("echo")
		in, err := gatenet.StdinPipe(cmd)
		require.NoError(t, err)
		out, err := gatenet.StdoutPipe(cmd)
		require.NoError(t, err)
		start := time.Now()
		time.Sleep(time.Hour)
		require.Equal(t, time.Hour, time.Since(start), "the fake clock moved on")
		require.NoError(t, cmd.Start())
		_, err = in.Write([]byte("through the child\n"))
		require.NoError(t, err)
		require.NoError(t, in.Close())
		got, err := io.ReadAll(out)
		require.NoError(t, err)
		require.Equal(t, "through the child\n", string(got))
		require.NoError(t, cmd.Wait())
		require.NoError(t, out.Close())

		before := testutil.OpenFDs(t)
		failed := exec.Command("/nonexistent/gatenet")
		stdout, err := gatenet.StdoutPipe(failed)
		require.NoError(t, err)
		require.Error(t, failed.Start())
		require.Equal(t, before, testutil.OpenFDs(t), "a failed Start closed both ends")
		_, err = stdout.Read(make([]byte, 8))
		requirePathError(t, err, "read", "|stdout", os.ErrClosed)

		never := child("silent")
		_, err = gatenet.StdoutPipe(never) // its File's finalizer closes it
		require.NoError(t, err)
	})
	t.Log("the bubble ended with a command never started")
}
