//go:build !linux

// Command gatebench compares gatenet with the standard library on every
// workload of the performance issue. gatenet's poller is Linux-only
// (elsewhere the package delegates to the standard library), so there is
// nothing to compare here.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "gatebench: Linux only (gatenet's poller is epoll)")
	os.Exit(2)
}
