//go:build linux && !race

package gatenet_test

// stressMaxMsg bounds TestFileStressMessages' message sizes (1..stressMaxMsg
// bytes); see file_stress_race_test.go for the -race value.
const stressMaxMsg = 2048
