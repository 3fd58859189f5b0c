//go:build linux

package pollfd

import (
	"sync"
	"sync/atomic"
)

// A token names one registration: the low 32 bits are a slot in the table,
// the high 32 bits the slot's generation at registration time. The kernel
// hands the token back in epoll_event.data. It is never a pointer (the kernel
// cannot keep a Go object alive) and never the bare fd (the kernel reuses an
// fd number the moment it is closed). When a Desc closes, its slot's
// generation moves on, so an event fetched for the old registration — by an
// epoll_wait already in flight — finds a different token in the slot and is
// dropped. Token 0 is never issued: generations start at 1; the dedicated
// drain loop's wake-up eventfd uses it (drain.go, wakeToken).
const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	maxChunks = 1 << 12 // 16M registrations at once
)

type slot struct {
	desc atomic.Pointer[Desc]
	gen  uint32 // guarded by table.mu
}

type chunk [chunkSize]slot

// table maps tokens to descriptors. Lookups (the drain loop, harvesting
// waiters) are lock-free: chunks are published once and never move. Inserts
// and removals take mu.
type table struct {
	chunks [maxChunks]atomic.Pointer[chunk]

	mu   sync.Mutex
	free []uint32 // released slots, reused LIFO
	next uint32   // first never-used slot
}

func (t *table) slot(i uint32) *slot {
	c := t.chunks[i>>chunkBits].Load()
	if c == nil {
		return nil
	}
	return &c[i&(chunkSize-1)]
}

// insert stores d in a free slot and sets d.token. It reports false when
// the table is full.
func (t *table) insert(d *Desc) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if t.next == maxChunks*chunkSize {
			return false
		}
		i = t.next
		t.next++
		if t.chunks[i>>chunkBits].Load() == nil {
			t.chunks[i>>chunkBits].Store(new(chunk))
		}
	}
	s := t.slot(i)
	s.gen++
	if s.gen == 0 { // wrapped: 0 would make token 0 reachable
		s.gen = 1
	}
	d.token = uint64(s.gen)<<32 | uint64(i)
	s.desc.Store(d)
	return true
}

// remove releases d's slot. It reports false if d is not registered.
func (t *table) remove(d *Desc) bool { return t.removeToken(d.token, d) }

// removeToken releases the slot of token, if d holds it: remove, for a
// Desc whose token has moved to another table (MoveToShard).
func (t *table) removeToken(token uint64, d *Desc) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := uint32(token)
	s := t.slot(i)
	if s == nil || s.desc.Load() != d {
		return false
	}
	s.desc.Store(nil)
	t.free = append(t.free, i)
	return true
}

// lookup returns the descriptor registered under token, or nil if the token
// is stale (closed, or the slot reused by a newer registration).
func (t *table) lookup(token uint64) *Desc {
	i := uint32(token)
	if i>>chunkBits >= maxChunks {
		return nil
	}
	s := t.slot(i)
	if s == nil {
		return nil
	}
	d := s.desc.Load()
	if d == nil || d.token != token {
		return nil
	}
	return d
}
