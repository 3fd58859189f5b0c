package realclock_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gatenet/gatenet/internal/realclock"
)

// TestRealInBubble checks that the clock moves in a bubble while the
// bubble's own stands still, and stands still while the bubble's jumps.
func TestRealInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake, real := time.Now(), realclock.Nanotime()
		// A bounded count of readings (seconds' worth), not a timed
		// assertion: a clock the bubble faked would never move here.
		for n := 0; realclock.Nanotime()-real < int64(time.Millisecond); n++ {
			if n == 1e8 {
				t.Fatal("the real clock did not move 1ms in 1e8 readings")
			}
		}
		if !time.Now().Equal(fake) {
			t.Fatalf("the bubble's clock moved while the goroutine ran: %v", time.Since(fake))
		}
		beforeSleep := realclock.Nanotime()
		time.Sleep(time.Hour) // the bubble's clock jumps an hour at once
		if moved := time.Duration(realclock.Nanotime() - beforeSleep); moved >= time.Hour {
			t.Fatalf("the real clock followed the bubble's: moved %v", moved)
		}
	})
}

func TestNowMonotonic(t *testing.T) {
	a := realclock.Now()
	b := realclock.Now()
	if b.Before(a) {
		t.Fatalf("Now went back: %v then %v", a, b)
	}
}

func BenchmarkNanotime(b *testing.B) {
	for b.Loop() {
		realclock.Nanotime()
	}
}
