//go:build linux

package poll

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestContextMutex: the zero value is unlocked, a free mutex is taken
// whatever the context says, a held one fails a waiter whose context
// ends, and every other waiter still gets it, one at a time.
func TestContextMutex(t *testing.T) {
	var m ContextMutex
	done, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, m.LockContext(done)) // free: taken
	require.ErrorIs(t, m.LockContext(done), context.Canceled)

	short, cancelShort := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, m.LockContext(short), context.DeadlineExceeded)

	const waiters = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		holders int
		most    int
	)
	for range waiters {
		wg.Go(func() {
			m.Lock()
			mu.Lock()
			holders++
			most = max(most, holders)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			holders--
			mu.Unlock()
			m.Unlock()
		})
	}
	time.Sleep(10 * time.Millisecond) // most of them queued behind this holder
	m.Unlock()
	wg.Wait()
	require.Equal(t, 1, most)
	require.NoError(t, m.LockContext(done)) // free again
	m.Unlock()
}
