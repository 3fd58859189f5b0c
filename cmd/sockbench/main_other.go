//go:build !linux

// Command sockbench compares gatenet's TCP sockets with net's under every
// poller strategy. gatenet's poller is Linux-only (elsewhere the package
// delegates to the standard library), so there is nothing to compare here.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "sockbench: Linux only (gatenet's poller is epoll)")
	os.Exit(2)
}
