//go:build linux

package httptest_test

// net/http keep-alive throughput, net and gatenet side by side in one run:
// BenchmarkHTTPKeepAlive (64 concurrent clients in this process) and, with
// GATENET_WRK=1, TestWrkSideBySide (wrk in another process).

import (
	"context"
	"net/http"
	stdhttptest "net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatenet/gatenet/httptest"
	"github.com/gatenet/gatenet/internal/benchharness"
	"github.com/gatenet/gatenet/internal/testutil"
)

const benchClients = 64

var benchBody = []byte("Hello, World! A small keep-alive response body.\n")

func benchHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write(benchBody)
}

// benchServer is one stack's server: net/http/httptest's on net, this
// package's on gatenet, with a client keeping benchClients connections.
type benchServer struct {
	url    string
	client *http.Client
	close  func()
}

var benchStacks = []struct {
	name  string
	start func(http.Handler) benchServer
}{
	{"net", func(h http.Handler) benchServer {
		ts := stdhttptest.NewServer(h)
		return benchServer{ts.URL, ts.Client(), ts.Close}
	}},
	{"gatenet", func(h http.Handler) benchServer {
		ts := httptest.NewServer(h)
		return benchServer{ts.URL, ts.Client(), ts.Close}
	}},
}

func (s benchServer) get() error { return benchharness.HTTPGet(s.client, s.url) }

// BenchmarkHTTPKeepAlive: GET requests with a 48-byte response from 64
// concurrent clients over keep-alive connections; reports requests/s.
func BenchmarkHTTPKeepAlive(b *testing.B) {
	for _, stack := range benchStacks {
		b.Run(stack.name, func(b *testing.B) {
			s := stack.start(http.HandlerFunc(benchHandler))
			defer s.close()
			s.client.Transport.(*http.Transport).MaxIdleConnsPerHost = benchClients
			// Warm up: open the connections.
			var wg sync.WaitGroup
			for range benchClients {
				wg.Go(func() {
					if err := s.get(); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.get(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}

var wrkRequestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// TestWrkSideBySide (GATENET_WRK=1; needs wrk): wrk -t2 -c64 -d3s against
// a net server and a gatenet server, alternately, three rounds; logs each
// round's requests/s, the medians and gatenet/net.
func TestWrkSideBySide(t *testing.T) {
	if os.Getenv("GATENET_WRK") != "1" {
		t.Skip("set GATENET_WRK=1 to run wrk against net and gatenet servers")
	}
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skipf("wrk is not installed (apt-get install wrk): %v", err)
	}
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 5*time.Minute)
	const rounds = 3
	results := map[string][]float64{}
	for round := range rounds {
		for _, stack := range benchStacks {
			s := stack.start(http.HandlerFunc(benchHandler))
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			out, err := exec.CommandContext(ctx, wrk, "-t2", "-c64", "-d3s", s.url+"/").CombinedOutput()
			cancel()
			s.close()
			if err != nil {
				t.Fatalf("wrk: %v\n%s", err, out)
			}
			m := wrkRequestsPerSec.FindSubmatch(out)
			if m == nil {
				t.Fatalf("no Requests/sec in wrk's output:\n%s", out)
			}
			rps, err := strconv.ParseFloat(string(m[1]), 64)
			if err != nil {
				t.Fatal(err)
			}
			results[stack.name] = append(results[stack.name], rps)
			t.Logf("round %d %-7s %10.0f requests/s", round+1, stack.name, rps)
		}
	}
	median := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	n, g := median(results["net"]), median(results["gatenet"])
	t.Logf("median: net %.0f, gatenet %.0f requests/s; gatenet/net %.3f", n, g, g/n)
}
