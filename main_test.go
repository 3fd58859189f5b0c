//go:build linux

package gatenet_test

// The root package's tests are named after the file they test (conn_test.go
// tests conn.go, udpsock_test.go udpsock.go, and so on); the helpers they
// share are in helpers_*_test.go, and those every package shares in
// internal/testutil.

import (
	"testing"

	"github.com/gatenet/gatenet/internal/testutil"
)

func TestMain(m *testing.M) {
	testutil.StartPollers()
	testutil.VerifyTestMain(m)
}
