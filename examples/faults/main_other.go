//go:build !linux

// Off Linux gatenet delegates to the standard library, so the faults example has
// nothing gatenet-specific to show.
package main

import "fmt"

func main() {
	fmt.Println("faults need Linux")
}
