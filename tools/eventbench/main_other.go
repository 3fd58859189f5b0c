//go:build !linux

// Command eventbench compares gatenet's ReadyQueue with gnet and nbio; it
// runs on Linux only, where gatenet has its own poller.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "eventbench: Linux only")
	os.Exit(2)
}
