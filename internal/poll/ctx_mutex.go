//go:build linux

package poll

import (
	"context"
	"sync/atomic"
)

// ContextMutex is a mutex whose Lock can give up when a context is done,
// for state a conn's readers share above the descriptor's own locks (a
// UDPConn's received GRO trains): a reader whose context ends returns,
// rather than wait behind one that waits for the descriptor. It is an
// fdSema over one count, so its waiters queue in order and park as the
// descriptor's lock waiters do. The zero value is unlocked; it must not
// be copied.
type ContextMutex struct {
	used atomic.Bool // the one count has been taken once: from then on it lives in s
	s    fdSema
}

// Lock locks m, waiting as long as it takes.
func (m *ContextMutex) Lock() { m.LockContext(context.Background()) }

// LockContext locks m, or returns ctx's error, holding nothing, if ctx is
// done before m is free. A free m is taken whatever ctx says.
func (m *ContextMutex) LockContext(ctx context.Context) error {
	if m.used.CompareAndSwap(false, true) {
		return nil
	}
	if m.s.acquireContext(ctx, false) {
		return nil
	}
	return ctx.Err()
}

// Unlock unlocks m, handing it to the first waiter if any.
func (m *ContextMutex) Unlock() { m.s.release() }
