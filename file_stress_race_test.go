//go:build linux && race

package gatenet_test

// stressMaxMsg bounds TestFileStressMessages' message sizes (1..stressMaxMsg
// bytes). Under the race detector the 10^6 messages are kept short: with
// sizes up to 2 KiB (1 GB in all) the run takes over 20 s on two cores;
// the count of messages, which is what exercises the edges, is the same.
const stressMaxMsg = 512
