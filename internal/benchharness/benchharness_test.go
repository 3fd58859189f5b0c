//go:build linux

package benchharness

import (
	"math"
	"testing"
	"time"

	"github.com/gatenet/gatenet/pollfd"
)

// TestPollerCounts runs a real gatenet ping-pong and checks the per-round
// poller counts a child adds to its result: every round trip makes one end
// wait for the other, so parks and wake-ups are there, and a wake-up only
// ever ends a park.
func TestPollerCounts(t *testing.T) {
	s, err := StackFor("gatenet")
	if err != nil {
		t.Fatal(err)
	}
	before := pollfd.Default().Stats()
	r, err := TCPPingPong(s, 64, 100*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	addPollerCounts(&r, before, pollfd.Default().Stats())
	t.Logf("%d round trips, %v", r.Ops, r.Extra)
	parks, wakeups := r.Extra["parks_per_op"], r.Extra["wakeups_per_op"]
	// A round trip parks about twice; the setup (dial, accept, close) adds
	// a few parks of its own, which weigh more in a short round on a
	// loaded machine.
	if ops := float64(r.Ops); !(parks > 0 && parks*ops <= 10*ops+50) {
		t.Errorf("parks per round trip = %v over %d round trips, want more than 0 and at most 10 (+50 in all)", parks, r.Ops)
	}
	if !(wakeups > 0 && wakeups <= parks+0.01) {
		t.Errorf("wake-ups per round trip = %v with %v parks, want in (0, parks]", wakeups, parks)
	}
	for _, k := range []string{"drain_waits_per_op", "harvests_per_op"} {
		if _, ok := r.Extra[k]; !ok {
			t.Errorf("no %s in %v", k, r.Extra)
		}
	}

	var none Result // no operations: nothing to divide by, nothing added
	addPollerCounts(&none, before, pollfd.Default().Stats())
	if none.Extra != nil {
		t.Errorf("a round without operations got %v", none.Extra)
	}
}

func TestDrainShares(t *testing.T) {
	before := []pollfd.Stats{{}, {DrainTime: time.Second}}
	after := []pollfd.Stats{
		{DrainTime: 200 * time.Millisecond, DrainEvents: 300, DrainWakeups: 100, Wakeups: 150},
		{DrainTime: time.Second + 600*time.Millisecond, DrainEvents: 500, DrainWakeups: 200, Wakeups: 250},
	}
	got := DrainShares(before, after, 2*time.Second)
	want := map[string]float64{
		"shards":                 2,
		"drain_busiest_core":     0.3,       // 600 ms of 2 s
		"drain_busiest_wakeups":  0.5,       // 200 of 400
		"drain_events_per_cpu_s": 800 / 0.8, // 800 events in 800 ms
	}
	for k, w := range want {
		if g := got[k]; math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}
