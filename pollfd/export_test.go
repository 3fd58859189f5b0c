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

// LateIdleWake is what a Desc.Close that emptied shard 0 does after the
// count fell to zero (drain.go's unregistered), called once more, as one
// racing Poller.Close would call it after Close returned.
func (p *Poller) LateIdleWake() {
	s := p.shards[0]
	s.loop.armed.Store(false)
	s.loop.unregistered(s)
}

// WakeFd is the dedicated loop's eventfd number on shard 0.
func (p *Poller) WakeFd() int { return p.shards[0].loop.eventfd }
