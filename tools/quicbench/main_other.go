//go:build !linux

// Command quicbench compares quic-go over net's and gatenet's UDP sockets;
// it runs on Linux only, where gatenet has its own poller.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "quicbench: Linux only")
	os.Exit(2)
}
