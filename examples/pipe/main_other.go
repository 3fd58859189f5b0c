//go:build !linux

// Off Linux gatenet delegates to the standard library, so there is nothing
// gatenet-specific to show.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("gatenet pipes need Linux")
	os.Exit(1)
}
