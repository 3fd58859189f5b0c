//go:build linux

package main

// net/http keep-alive: a server on the contender's listener, driven by
// clients in this process (http) or by wrk in another (wrk).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

var httpBody = []byte("Hello, World! A small keep-alive response body.\n")

func httpHandler(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	w.Write(httpBody)
}

// httpServer serves httpHandler on a listener of s until stop.
func httpServer(s benchharness.Stack) (url string, stop func() error, err error) {
	ln, err := s.Listen()
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(httpHandler)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	stop = func() error {
		err := srv.Close() // closes the listener and every connection
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}
	return "http://" + ln.Addr().String() + "/", stop, nil
}

// httpLoad: clients goroutines sharing one http.Client whose Transport
// dials with s and keeps a connection per client; an operation is one GET
// with its body read, timed (p50, p99, p99.9 in Extra, with the process's
// scheduling latencies).
func httpLoad(s benchharness.Stack, clients int, duration time.Duration) (result, error) {
	url, stop, err := httpServer(s)
	if err != nil {
		return result{}, err
	}
	tr := &http.Transport{
		DialContext:         s.Dial,
		MaxIdleConns:        clients,
		MaxIdleConnsPerHost: clients,
		DisableCompression:  true,
	}
	client := &http.Client{Transport: tr}
	get := func(int) error { return benchharness.HTTPGet(client, url) }
	run, loopErr := benchharness.RunConcurrent(clients, 1, duration, get)
	tr.CloseIdleConnections()
	if err := errors.Join(loopErr, stop()); err != nil {
		return result{}, err
	}
	return run.Result(), nil
}

// wrkLatencyScript makes wrk print its latency percentiles in
// microseconds on one line wrkLatency reads (its --latency table stops at
// p99).
const wrkLatencyScript = `done = function(summary, latency, requests)
  io.write(string.format("gatebench-latency-us p50=%d p99=%d p999=%d\n",
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
`

var (
	wrkRequestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkRequests       = regexp.MustCompile(`([0-9]+) requests in`)
	wrkLatency        = regexp.MustCompile(`gatebench-latency-us p50=([0-9]+) p99=([0-9]+) p999=([0-9]+)`)
	wrkErrors         = regexp.MustCompile(`Non-2xx or 3xx responses|Socket errors`)
)

// wrkThreads is wrk's -t: two client threads, one per core here, as a
// load generator on its own machine would have.
const wrkThreads = 2

// wrkLoad serves and runs wrk -t2 -c<conns> against the server for
// duration (whole seconds, at least 1: wrk takes no fractions). The rate
// and the latency percentiles (Extra "p50_us", "p99_us", "p999_us") are
// wrk's; the CPU and the scheduling latencies are this (the server's)
// process's only.
func wrkLoad(s benchharness.Stack, conns int, duration time.Duration) (result, error) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return result{}, err
	}
	script, err := os.CreateTemp("", "gatebench-wrk-*.lua")
	if err != nil {
		return result{}, err
	}
	defer os.Remove(script.Name())
	_, err = script.WriteString(wrkLatencyScript)
	if err := errors.Join(err, script.Close()); err != nil {
		return result{}, err
	}
	url, stop, err := httpServer(s)
	if err != nil {
		return result{}, err
	}
	secs := max(1, int(duration.Round(time.Second)/time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+time.Minute)
	defer cancel()
	sched := benchharness.StartSched()
	meter := benchharness.StartMeter()
	out, runErr := exec.CommandContext(ctx, wrk, fmt.Sprintf("-t%d", min(wrkThreads, conns)), fmt.Sprintf("-c%d", conns),
		fmt.Sprintf("-d%ds", secs), "--latency", "-s", script.Name(), url).CombinedOutput()
	_, cpu := meter.Stop()
	schedQ := sched.Stop(benchharness.SchedQuantiles...)
	if err := errors.Join(runErr, stop()); err != nil {
		return result{}, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	r, err := parseWrk(out)
	if err != nil {
		return result{}, err
	}
	r.CPUNanos = cpu
	benchharness.AddSched(&r, schedQ)
	return r, nil
}

// parseWrk reads wrk's requests, rate and the latency line of
// wrkLatencyScript; any socket error or non-2xx response fails the round.
func parseWrk(out []byte) (result, error) {
	m, k, l := wrkRequestsPerSec.FindSubmatch(out), wrkRequests.FindSubmatch(out), wrkLatency.FindSubmatch(out)
	if m == nil || k == nil || l == nil {
		return result{}, fmt.Errorf("no Requests/sec or latency line in wrk's output:\n%s", out)
	}
	if wrkErrors.Match(out) {
		return result{}, fmt.Errorf("wrk saw errors:\n%s", out)
	}
	rps, err1 := strconv.ParseFloat(string(m[1]), 64)
	reqs, err2 := strconv.ParseInt(string(k[1]), 10, 64)
	var lat [3]float64
	var err3 error
	for i := range lat {
		v, err := strconv.ParseFloat(string(l[i+1]), 64)
		lat[i], err3 = v, errors.Join(err3, err)
	}
	if err := errors.Join(err1, err2, err3); err != nil || rps <= 0 || reqs <= 0 {
		return result{}, fmt.Errorf("wrk's output: %v\n%s", err, out)
	}
	// Seconds is wrk's own measure, so that Ops/Seconds is its rate.
	return result{Ops: reqs, Seconds: float64(reqs) / rps, Extra: map[string]float64{
		"wrk_rps": rps, "p50_us": lat[0], "p99_us": lat[1], "p999_us": lat[2],
	}}, nil
}
