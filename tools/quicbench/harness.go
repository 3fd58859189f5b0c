//go:build linux

package main

// A round's result, its figures, and what the parent makes of the
// children's stderr: quic-go's log lines about its UDP optimisations.

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gatenet/gatenet/internal/benchharness"
)

// result is one round over one socket kind, measured in a child process
// of its own, which prints it as JSON. The counts and times are of the
// measured part: from the server's read that ended the warm-up to its
// read of the last byte.
type result struct {
	Conn       string     `json:"conn"`
	Round      int        `json:"round,omitempty"`
	Size       int64      `json:"size"`      // bytes the client wrote
	Bytes      int64      `json:"bytes"`     // bytes the server read in the measured part
	Seconds    float64    `json:"secs"`      // wall time of the measured part
	CPUNanos   int64      `json:"cpu_ns"`    // the process's user+system CPU (server and client)
	VolCtx     int64      `json:"vol_ctx"`   // the process's voluntary context switches
	InvolCtx   int64      `json:"invol_ctx"` // and involuntary ones
	Server     sideCounts `json:"server"`
	Client     sideCounts `json:"client"`
	ServerOpts sideOpts   `json:"server_opts"`
	ClientOpts sideOpts   `json:"client_opts"`
	// Perf is -perf's count of each event over the whole child (set in
	// the parent).
	Perf map[string]int64 `json:"perf,omitempty"`
}

func (r result) mb() float64 { return float64(r.Bytes) / 1e6 }

// mbps is MB (10^6 bytes) per second.
func (r result) mbps() float64 { return r.mb() / r.Seconds }

// cpuPerMB is CPU milliseconds per MB.
func (r result) cpuPerMB() float64 { return float64(r.CPUNanos) / 1e6 / r.mb() }

// syscallsPerMB is both sides' data-path system call attempts per MB.
func (r result) syscallsPerMB() float64 {
	return float64(r.Server.syscalls()+r.Client.syscalls()) / r.mb()
}

// stat is a median with its range.
type stat = benchharness.Stat

// summarize returns the median and range of xs, which must not be empty.
var summarize = benchharness.Summarize

// probeLog is what quic-go logged at debug level in a child, about the
// server's socket, the client's, and the connection, with the lines
// about packets and frames left out.
type probeLog struct {
	Server     []string `json:"server"`
	Client     []string `json:"client"`
	Connection []string `json:"connection"`
}

// relevant picks quic-go's lines about its UDP optimisations: ECN, packet
// info, GSO, DF, buffer sizes, "Disabling optimizations".
var relevant = regexp.MustCompile(`(?i)ecn|packet info|gso|segment|disabl|optimi|buffer|\bDF\b`)

// perPacket matches quic-go's debug lines about single packets and
// frames ("-> Sending packet …", "<- Reading packet …", a frame's line).
var perPacket = regexp.MustCompile(`->|<-|^\s`)

// parseProbe sorts the debug-log child's stderr by the child's marks.
func parseProbe(log string) probeLog {
	var p probeLog
	var cur *[]string
	for line := range strings.Lines(log) {
		line = strings.TrimRight(line, "\r\n")
		switch line {
		case markServer:
			cur = &p.Server
			continue
		case markClient:
			cur = &p.Client
			continue
		case markTransfer:
			cur = &p.Connection
			continue
		case markDone:
			cur = nil
			continue
		}
		if cur == nil || perPacket.MatchString(line) || !relevant.MatchString(line) {
			continue
		}
		*cur = appendNew(*cur, stripLogTime(line))
	}
	return p
}

// logTime is the log package's standard prefix, "2006/01/02 15:04:05 ".
var logTime = regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d(\.\d+)? `)

func stripLogTime(line string) string { return logTime.ReplaceAllString(line, "") }

// unexpectedLines is what a timed child wrote on stderr besides its
// marks: quic-go's warnings (a buffer it could not enlarge), or anything
// else.
func unexpectedLines(log string) []string {
	var out []string
	for line := range strings.Lines(log) {
		line = strings.TrimRight(line, "\r\n")
		switch line {
		case "", markServer, markClient, markTransfer, markDone:
			continue
		}
		out = appendNew(out, stripLogTime(line))
	}
	return out
}

// appendNew appends the lines that xs does not hold yet.
func appendNew(xs []string, lines ...string) []string {
	for _, l := range lines {
		if !slices.Contains(xs, l) {
			xs = append(xs, l)
		}
	}
	return xs
}
