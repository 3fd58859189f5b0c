//go:build linux

package gatenet_test

// The root package's tests are named after the file they test (conn_test.go
// tests conn.go, udpsock_test.go udpsock.go, and so on); the helpers they
// share are in helpers_*_test.go, and those every package shares in
// internal/testutil.

import (
	"os"
	"testing"

	"github.com/gatenet/gatenet/internal/testutil"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChildMode(mode)) // this process is a test's child (pipe_exec_test.go)
	}
	if os.Getenv("GATENET_EMFILE_CHILD") == "" { // that child starts the poller itself (pipe_test.go)
		testutil.StartPollers()
	}
	testutil.VerifyTestMain(m)
}
