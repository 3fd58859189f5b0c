//go:build !linux

// Off Linux gatenet delegates to the standard library, so the tour has
// nothing gatenet-specific to show.
package main

import "fmt"

func main() {
	fmt.Println("the tour needs Linux")
}
