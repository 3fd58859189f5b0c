//go:build linux

package pollfd

// Placement: how many shards a poller has, and which one a descriptor is
// on (docs/DESIGN.md, "How delivery scales with the cores").
//
// A shard's events are delivered by its own drain loop, one goroutine, and
// by its waiters' harvests. Its drain loop is nested in the runtime's
// poller: when the shard's epoll descriptor turns readable, whichever
// thread polls the runtime's poller readies the loop, as it readies any
// network waiter. So with several shards their loops are readied and run
// on several Ps at once, and delivery grows with the shard count, where one
// shard's one loop is a serial point that every readiness of the process
// passes through. DefaultOptions' count follows GOMAXPROCS (ShardsFor).
// Each shard serves its share of the Ps: it makes park slots for that
// many (slots.go) and counts its scheduler busy when that many of its
// waiters are woken and queued (Desc.harvest).
//
// Within a shard a waiter about to park harvests the shard's other events
// (strategy.go): in a request/response hop between two descriptors of one
// shard the waiter hands its peer the reply's readiness on its own thread.
// Spread round-robin, two ends of one connection in this process land on
// different shards, and the hop goes through a drain loop's wake-up
// instead, the slower path (docs/PERFORMANCE.md, "Cores"). So a
// connection's two ends, when both are this process's, are placed on one
// shard: the caller names a key both ends can compute (the root package:
// the dialling end's address, which the dialler learns from getsockname
// after connect and the acceptor from accept) and ShardFor maps it. Keys
// from many connections spread like round-robin.
//
// The dialling end exists before its address is known: it is opened on a
// shard first and moved once its connect has finished (moveToShard). That
// is safe only while nothing refers to the old shard: the Desc is not in
// the epoll set (no event carries its token), no waiter, timer, context
// or list holds it, and its opener is the only goroutine using it.

import "github.com/gatenet/gatenet/internal/pollhook"

// ShardFor maps key to one of the poller's shards, for OpenLazy and
// OpenShard: the same key always gives the same shard, and keys that
// differ only in a few low bits (ephemeral ports are often handed out two
// apart) still spread over all of them.
func (p *Poller) ShardFor(key uint64) int {
	if len(p.shardList()) <= 1 {
		return 0
	}
	// A 64-bit finaliser (splitmix64's): every input bit moves every
	// output bit.
	key ^= key >> 30
	key *= 0xbf58476d1ce4e5b9
	key ^= key >> 27
	key *= 0x94d049bb133111eb
	key ^= key >> 31
	return int(key % uint64(len(p.shards)))
}

func init() { pollhook.MoveToShard = (*Desc).moveToShard }

// moveToShard moves d to shard i (modulo the shard count) and reports
// whether it moved. Only a descriptor opened with OpenLazy that has never
// waited, been watched or had a deadline can move, and only its opener
// may call this, while no other call on d runs: the dialling end of a
// connection, placed beside its peer once its connect has finished
// without waiting (the top of this file). Otherwise, or when d is on
// shard i already, it does nothing and reports false. Unexported, for
// those preconditions: internal/poll reaches it through
// internal/pollhook.
func (d *Desc) moveToShard(i int) bool {
	p := d.shard.poller
	if i < 0 {
		i = -i
	}
	to := p.shards[i%len(p.shards)]
	from := d.shard
	if to == from || to.closed.Load() {
		return false
	}
	d.mu.Lock()
	if d.state.Load() != 0 || d.ext != nil || d.ctx != nil || d.rg.dl != nil || d.wg.dl != nil {
		// In the epoll set, closing, in a bubble, watched or with a
		// deadline: something may refer to from.
		d.mu.Unlock()
		return false
	}
	old := d.token
	if !to.table.insert(d) { // sets d.token to to's
		d.mu.Unlock()
		return false
	}
	from.table.removeToken(old, d)
	d.shard = to
	d.mu.Unlock()
	to.stats.registered.Add(1)
	to.loop.registered(to)
	if from.stats.registered.Add(-1) == 0 {
		from.loop.unregistered(from)
	}
	return true
}
