//go:build !linux

// Off Linux gatenet delegates to the standard library, so this example has
// nothing gatenet-specific to show.
package main

import "fmt"

func main() {
	fmt.Println("the echo example needs Linux")
}
