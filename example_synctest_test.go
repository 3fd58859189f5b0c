//go:build linux

package gatenet_test

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatenet/gatenet"
)

// testSlowClient is a test as a user writes it: an http.Server on gatenet
// and a client that sends one byte of a request, in a testing/synctest
// bubble. The server's 30-second ReadHeaderTimeout passes on the bubble's
// fake clock, at once: both ends are gatenet's, in the bubble, so their
// waits let the bubble idle and its clock jump to the deadline.
func testSlowClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: 30 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()

		c, err := gatenet.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		c.Write([]byte("G")) // a request that never ends
		reply, _ := io.ReadAll(c)
		fmt.Printf("after %v the server answered %q and hung up\n", time.Since(start), reply[:12])
	})
}

// Fake time for real connections: a deadline of 30 s, inside a
// testing/synctest bubble, fires at once. In a test file testSlowClient is
// a TestXxx; here testing.RunTests runs it (quietly, so that its output
// is the example's under go test -v too).
func Example_synctest() {
	// Quietly, and once even under go test -count=N.
	for name, quiet := range map[string]string{"test.v": "false", "test.count": "1"} {
		if v := flag.Lookup(name); v != nil {
			was := v.Value.String()
			v.Value.Set(quiet)
			defer v.Value.Set(was)
		}
	}
	testing.RunTests(func(_, _ string) (bool, error) { return true, nil },
		[]testing.InternalTest{{Name: "TestSlowClient", F: testSlowClient}})
	// Output: after 30s the server answered "HTTP/1.1 400" and hung up
}
