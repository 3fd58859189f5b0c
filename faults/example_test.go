package faults_test

import (
	"fmt"

	"github.com/gatenet/gatenet/faults"
)

// Parse reads the GATENET_FAULTS syntax (the value is validated), and
// String writes it back, seed first: what a failing test prints so that
// the run can be replayed.
func ExampleParse() {
	f, err := faults.Parse("slicer.read=1-7; latency.write=5ms+2ms; seed=42")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f)
	for _, x := range f.Faults {
		fmt.Printf("%T %+v\n", x, x)
	}

	_, err = faults.Parse("slicer=7-1")
	fmt.Println(err != nil)
	// Output:
	// seed=42;slicer.read=1-7;latency.write=5ms+2ms
	// faults.Slicer {Min:1 Max:7 Delay:0s Dir:read}
	// faults.Latency {Delay:5ms Jitter:2ms Dir:write}
	// true
}
