//go:build linux

package gatenet

import "github.com/gatenet/gatenet/internal/poll"

// PipeOn is Pipe on a chosen poller, so tests and benchmarks can run every
// poller strategy in one process.
var PipeOn = pipeOn

// PipeConfigOn is PipeConfig.Pipe on a chosen poller.
var PipeConfigOn = PipeConfig.pipeOn

// DefaultPipeSize is the kernel buffer PipeConfig{} asks for.
const DefaultPipeSize = defaultPipeSize

// SetPipeSize is the best-effort F_SETPIPE_SZ Pipe and the process pipes use.
var SetPipeSize = setPipeSize

// SendfileCalls reports how many sendfile(2) calls gatenet has made.
var SendfileCalls = poll.SendfileCalls

// SpliceCalls reports how many splice(2) calls gatenet has made.
var SpliceCalls = poll.SpliceCalls

// ParseUnixControlWith is ParseUnixControl closing through closeFD, so a
// fuzz target can feed it descriptor numbers it does not own.
var ParseUnixControlWith = parseUnixControl

// ShardOf is the poller shard c's descriptor is on.
func ShardOf(c Pollable) int { return c.descriptor().Desc().Shard() }

// LocalAddrKnown reports whether c's local address has been learnt (it is
// learnt when first asked for, localaddr.go, or by placeBesidePeer).
func LocalAddrKnown(c *TCPConn) bool { return c.fd.laddr.Load() != nil }

// Private reports whether c's reads and writes may keep their P: a socket
// gatenet made, never handed out (internal/poll/fd_sys.go).
func Private(c Pollable) bool { return c.descriptor().Private() }

// BubbleRecords is how many descriptors the synctest registry lists.
func BubbleRecords() int {
	bubbles.mu.Lock()
	defer bubbles.mu.Unlock()
	return len(bubbles.keys)
}
