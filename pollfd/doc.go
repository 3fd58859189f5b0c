// Package pollfd is gatenet's epoll readiness poller: a Poller of one or
// more shards, each an epoll instance with a drain loop that turns its
// events into wake-ups, and a Desc per registered descriptor whose two
// gates (read and write) I/O waiters park on. The default poller has a
// shard per four Ps, so delivery grows with GOMAXPROCS (place.go).
//
// It realises, outside the Go runtime, the ten contracts the runtime's own
// netpoller offers internal/poll:
//
//	runtimeNano            monotonic clock (time.Since of a fixed base)
//	pollServerInit         New, or the lazily created Default poller
//	pollOpen               (*Poller).Open: table entry, then EPOLL_CTL_ADD
//	                       (OpenLazy: the ADD at the first wait, for sockets)
//	pollClose              (*Desc).Close: requires Unblock; EPOLL_CTL_DEL if added
//	pollWait               (*Desc).Wait: closing > timeout > event error, then Ready, else park
//	pollWaitCanceled       no caller on Linux
//	pollReset              (*Desc).Prepare: fail fast or clear Ready
//	pollSetDeadline        (*Desc).SetDeadline
//	pollUnblock            (*Desc).Unblock: closing, wake both gates
//	isPollServerDescriptor IsPollDescriptor
//
// An I/O loop built on it looks like internal/poll's:
//
//	if err := d.Prepare(pollfd.ModeRead); err != nil { return err }
//	for {
//		n, err := unix.Read(fd, p)
//		if err != unix.EAGAIN { return n, err }
//		if err := d.Wait(pollfd.ModeRead); err != nil { return 0, err }
//	}
//
// Every descriptor is registered once, edge-triggered, for both directions
// (EPOLLIN|EPOLLOUT|EPOLLRDHUP|EPOLLET). Why no edge is lost is argued in
// gate.go; how the poller waits for epoll (a dedicated thread, or the epoll
// descriptor nested in the runtime's own poller, with or without waiter-side
// harvesting) is in strategy.go; how a waiter parks and is woken is in
// park.go, on its gate's semaphore (sema_runtime.go) or, by default, in
// the runtime's poller on a pooled eventfd (slots.go); the
// drain loop's life cycle (it runs only while descriptors are registered,
// so an idle program keeps no goroutine of gatenet's) is in drain.go.
//
// The package is Linux-only; elsewhere New returns errors.ErrUnsupported.
package pollfd
