//go:build linux && race

package pollfd

// The park semaphore of race builds: a channel of capacity one, which the
// race detector understands (sema_runtime.go says why not the runtime's
// park there).

type parkSema struct {
	ch chan struct{}
}

// prepare makes the channel, on the first park; called with the Desc's mu
// held, so that a waker (which holds it too) finds it made.
func (s *parkSema) prepare() {
	if s.ch == nil {
		s.ch = make(chan struct{}, 1)
	}
}

func (s *parkSema) park() { <-s.ch }

// wake never blocks: the gate gives one token per park.
func (s *parkSema) wake() { s.ch <- struct{}{} }
