package bubble

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestInAndGoOutside: In tells a bubble's goroutines from others, and a
// goroutine GoOutside starts from a bubble is in none, so the bubble's
// clock moves on while it blocks on something of no bubble's.
func TestInAndGoOutside(t *testing.T) {
	if In() {
		t.Fatal("In outside every bubble")
	}
	release := make(chan struct{}) // made outside the bubble: the goroutine outside may use it
	var outside, blocked atomic.Int32
	synctest.Test(t, func(t *testing.T) {
		if !In() {
			t.Fatal("not In in a bubble")
		}
		GoOutside(func() {
			if !In() {
				outside.Store(1)
			}
			blocked.Store(1)
			<-release
		})
		for blocked.Load() == 0 {
			time.Sleep(time.Microsecond) // the goroutine outside starts on the real clock
		}
		start := time.Now()
		time.Sleep(time.Hour)
		if got := time.Since(start); got != time.Hour {
			t.Fatalf("the bubble's clock moved %v, not an hour", got)
		}
	})
	close(release)
	if outside.Load() != 1 {
		t.Fatal("GoOutside's goroutine ran in the bubble")
	}
}
