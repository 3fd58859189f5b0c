//go:build linux

package main

// idle: bytes per idle server connection, one holding pattern per child
// (internal/benchharness.HoldIdle, the patterns of the root package's
// idle-memory test).

import (
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// idle holds n connections on s's server side the pattern's way
// (benchharness.IdlePeek, IdleRead4K, IdleWaitRead or IdleQueue).
func idle(s benchharness.Stack, pattern string, n int) (result, error) {
	r, err := benchharness.HoldIdle(s, pattern, n, benchharness.IdleOptions{})
	if err != nil {
		return result{}, err
	}
	return result{
		Ops:     int64(r.Conns),
		Seconds: max(r.Elapsed, time.Microsecond).Seconds(),
		Extra: map[string]float64{
			"bytes_per_conn": r.HeapPerConn, // HeapInuse + StackInuse
			"stack_per_conn": r.StackPerConn,
			"rss_per_conn":   r.RSSPerConn,
		},
	}, nil
}
