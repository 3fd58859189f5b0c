//go:build linux && race

package pollfd

import (
	"sync"

	"github.com/gatenet/gatenet/internal/bubble"
)

// The park semaphore of race builds: a sync.Mutex held while there is no
// token, which the race detector understands (sema_runtime.go says why not
// the runtime's park there). Like the runtime's park, and unlike a
// channel made in a synctest bubble, a goroutine blocked on it is not
// durably blocked and may be woken from outside any bubble: both builds
// leave durable parks to bubble.go.

type parkSema struct {
	mu sync.Mutex // held: no token; unlocked: a token, or never used
}

// prepare readies the semaphore for a park; called with the Desc's mu
// held. When a park is published no token is outstanding (every park on
// the semaphore takes the one it is given), so mu is unlocked only if no
// park has used it yet: TryLock takes it then, and fails harmlessly after.
func (s *parkSema) prepare() { s.mu.TryLock() }

// park takes the token: it sleeps until wake unlocks mu, and holds mu
// again for the next park.
func (s *parkSema) park() { s.mu.Lock() }

// wake gives the token. The gate gives one token per park, so mu is held.
func (s *parkSema) wake() { s.mu.Unlock() }

// newPlainSema is newSema's plain semaphore in race builds, where a
// parkSema takes one wake per park and newSema's may get more: a channel,
// made outside any bubble (one of the bubble could not be sent on from
// outside it).
func newPlainSema() (park, wake func()) {
	newToken := func() chan struct{} { return make(chan struct{}, 1) }
	var token chan struct{}
	if bubble.In() {
		token = madeOutsideBubble(newToken)
	} else {
		token = newToken()
	}
	return func() { <-token }, func() {
		select {
		case token <- struct{}{}:
		default:
		}
	}
}
