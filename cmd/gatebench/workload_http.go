//go:build linux

package main

// net/http keep-alive: a server on the contender's listener, driven by
// clients in this process (http) or by wrk in another (wrk).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
// with its body read.
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
	n, elapsed, cpu, loopErr := benchharness.RunConcurrent(clients, 1, duration, get)
	tr.CloseIdleConnections()
	if err := errors.Join(loopErr, stop()); err != nil {
		return result{}, err
	}
	return result{Ops: n, Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}

var (
	wrkRequestsPerSec = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkRequests       = regexp.MustCompile(`([0-9]+) requests in`)
	wrkErrors         = regexp.MustCompile(`Non-2xx or 3xx responses|Socket errors`)
)

// wrkLoad serves and runs wrk -t1 -c<conns> against the server for
// duration (whole seconds, at least 1: wrk takes no fractions). The rate
// is wrk's Requests/sec; the CPU is this (the server's) process's only.
func wrkLoad(s benchharness.Stack, conns int, duration time.Duration) (result, error) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		return result{}, err
	}
	url, stop, err := httpServer(s)
	if err != nil {
		return result{}, err
	}
	secs := max(1, int(duration.Round(time.Second)/time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second+time.Minute)
	defer cancel()
	meter := benchharness.StartMeter()
	out, runErr := exec.CommandContext(ctx, wrk, "-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", secs), url).CombinedOutput()
	_, cpu := meter.Stop()
	if err := errors.Join(runErr, stop()); err != nil {
		return result{}, fmt.Errorf("wrk: %w\n%s", err, out)
	}
	m, k := wrkRequestsPerSec.FindSubmatch(out), wrkRequests.FindSubmatch(out)
	if m == nil || k == nil {
		return result{}, fmt.Errorf("no Requests/sec in wrk's output:\n%s", out)
	}
	if wrkErrors.Match(out) {
		return result{}, fmt.Errorf("wrk saw errors:\n%s", out)
	}
	rps, err1 := strconv.ParseFloat(string(m[1]), 64)
	reqs, err2 := strconv.ParseInt(string(k[1]), 10, 64)
	if err := errors.Join(err1, err2); err != nil || rps <= 0 {
		return result{}, fmt.Errorf("wrk's output: %v\n%s", err, out)
	}
	// Seconds is wrk's own measure, so that Ops/Seconds is its rate.
	return result{Ops: reqs, Seconds: float64(reqs) / rps, CPUNanos: cpu,
		Extra: map[string]float64{"wrk_rps": rps}}, nil
}
