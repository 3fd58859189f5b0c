//go:build linux

package gatenet

// PipeOn is Pipe on a chosen poller, so tests and benchmarks can run every
// poller strategy in one process.
var PipeOn = pipeOn
