//go:build linux

package pollfd

// A durable park with a context, and where the context comes from.
//
// A durable park tells the bubble that only its own goroutines can end the
// wait. A context is one more waker (ctxwait.go, ready_bubble.go), and
// whether the bubble's goroutines are the only ones that can cancel it
// cannot be seen from the context: its Done channel may have been made
// outside the bubble, to be closed by a goroutine or a timer there. The
// runtime can see it, and does for a goroutine blocked in a select: that
// goroutine is durably blocked only if every channel of the select was
// made in the bubble. So while a wait with a context parks durably, a
// goroutine of the bubble (the watcher) selects on the context's Done
// channel and on a channel the waiter made. With a Done channel of the
// bubble the watcher is durably blocked too and the bubble idles as
// before, its clock moving to the next deadline; with one from outside it
// is not, and the bubble waits for the cancellation on the real clock, as
// it waits for a goroutine of its own that receives from that channel.
//
//	park    the waiter, about to park durably with done non-nil, makes
//	        stop and starts the watcher (watchDone).
//	watch   the watcher returns when stop closes; when done closes first
//	        it wakes the park itself, as the context's registration
//	        would, and then returns.
//	unpark  the waiter closes stop after its park, however it ended.
//
// Why the watcher wakes the park: the registration's callback runs on a
// goroutine outside the bubble when the cancel comes from outside, and a
// watcher that just returned would leave the bubble, for that moment,
// with every goroutine durably blocked, which synctest reports as a
// deadlock. Woken by the watcher, the waiter is runnable before the
// watcher leaves. The wake is the registration's own, so the second of
// the two finds nothing to do.
//
// The watcher costs a goroutine and a channel per durable park with a
// cancellable context, in bubbles only. internal/poll's lock waits
// (fd_mutex.go) use it through pollhook.WatchDone.

import "github.com/gatenet/gatenet/internal/pollhook"

func init() { pollhook.WatchDone = watchDone }

// watchDone starts the watcher of a durable park whose context's Done
// channel is done, and returns what ends it; nil for a nil done. wake
// wakes the park as the context's registration does.
func watchDone(done <-chan struct{}, wake func()) (stop func()) {
	if done == nil {
		return nil
	}
	ch := make(chan struct{})
	go func() {
		select {
		case <-done:
			wake()
		case <-ch:
		}
	}()
	return func() { close(ch) }
}
