//go:build linux

// Package reliability_test holds gatenet's reliability tests: churn,
// torture and faults. Sizes are small by default so that the package runs
// in well under a minute under -race; GATENET_SOAK=1 selects the big ones.
package reliability_test

import (
	"net"
	"os"
	"testing"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

func TestMain(m *testing.M) {
	warmUp()
	testutil.VerifyTestMain(m)
}

// warmUp creates the process-lifetime descriptors (gatenet's default
// poller, the runtime's netpoller) before any test takes its descriptor
// baseline, so that CheckLeaks does not count them.
func warmUp() {
	if r, w, err := gatenet.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	if ln, err := net.Listen("tcp4", "127.0.0.1:0"); err == nil {
		ln.Close()
	}
}

// soak reports whether the big sizes were asked for.
func soak() bool { return os.Getenv("GATENET_SOAK") == "1" }

func pick(small, big int) int {
	if soak() {
		return big
	}
	return small
}

// tcpPair is testutil.TCPPair (tests here also close the conns on
// purpose; the cleanup's second Close is ignored).
var tcpPair = testutil.TCPPair

// netTCPPair is the same with the standard library, for comparisons.
var netTCPPair = testutil.NetTCPPair
