//go:build linux

package pollfd

import "time"

// SetIdleLinger sets how long a nested drain loop outlives its shard's last
// descriptor (drain.go) and returns a function restoring the old value. A
// test that sets 0 makes every Close of a shard's last descriptor race the
// next Open; it must not run in parallel with other tests.
func SetIdleLinger(d time.Duration) (restore func()) {
	old := idleLinger.Swap(int64(d))
	return func() { idleLinger.Store(old) }
}

// Rearm is rearm, for TestDescExtMedia.
func (d *Desc) Rearm() { d.rearm() }

// AddRunnable adds n to the count of woken waiters not yet running of the
// shard d is on, as if n more were queued (harvestNow's rule).
func (d *Desc) AddRunnable(n int32) { d.shard.runnable.Add(n) }

// MoveToShard is moveToShard, which internal/poll reaches through
// internal/pollhook.
func (d *Desc) MoveToShard(i int) bool { return d.moveToShard(i) }

// CurrentBubble is currentBubble, for TestCurrentBubble.
func CurrentBubble() uint64 { return currentBubble() }
