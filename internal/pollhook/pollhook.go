// Package pollhook hands gatenet's descriptor layer (internal/poll) what
// pollfd keeps out of its exported API. pollfd sets the hooks in its init;
// this package imports nothing of gatenet's, so pollfd can import it
// without a cycle, and being internal it is no API either.
package pollhook

// Kick is pollfd's Desc.kick, a func(*pollfd.Desc, pollfd.Mode) (typed any
// here, since naming pollfd's types would import it): it wakes mode's
// waiter as an edge would, with no event behind it, for the fault layer.
// Set by pollfd's init, before any package importing pollfd initializes;
// internal/poll asserts it once into a typed variable.
var Kick any

// HungUp is pollfd's Desc.hungUp, a func(*pollfd.Desc) bool typed as Kick
// is: an event said the peer shut down its writing, hung up or left an
// error, so a short read of a stream may not have emptied it.
var HungUp any

// The bubble hooks, pollfd's durable parks in testing/synctest bubbles
// (pollfd/bubble.go), typed as Kick is:
//
//	InBubble      func(*pollfd.Desc) bool: the Desc was opened in a bubble.
//	Pair          func(a, b *pollfd.Desc) bool: a and b are the two ends of
//	              one connection or pipe; reports whether both were opened
//	              in a bubble and so were paired.
//	AcceptDurably func(*pollfd.Desc): a listener of a bubble.
//	Durable       func(*pollfd.Desc) bool: the Desc's waits park durably
//	              now (paired, or the bubble's listener or datagram
//	              socket).
//	NeverDurable  func(*pollfd.Desc): the Desc's waits never park durably.
//	WakePeer      func(*pollfd.Desc, pollfd.Mode): after a system call in
//	              mode succeeded, wake the peer's durable waiter it may
//	              have readied (ModeReadWrite: after a shutdown or close).
//	WakeDurable   func(*pollfd.Desc, pollfd.Mode): wake the Desc's own
//	              durable waiters in mode (a dial wakes its listener).
//	Unpair        func(*pollfd.Desc): the Desc's number left gatenet (Fd,
//	              File, a dup, a RawConn): neither it nor its peer parks
//	              durably from now on.
//	Datagram      func(*pollfd.Desc): a datagram socket of a bubble, durable
//	              once a send of its bubble reaches it.
//	Sending       func(*pollfd.Desc, int): a send of the bubble to the Desc
//	              begins (+1) or has ended (-1).
//	Reached       func(*pollfd.Desc, bool): a send of the bubble reached the
//	              Desc (true), or the Desc sent to a socket of its bubble.
//	ReachedRaw    func(*pollfd.Desc): a send through a RawConn of the bubble
//	              may have reached the Desc.
//	Unreached     func(*pollfd.Desc): the Desc, connected, sent to a peer
//	              that is no socket of its bubble; an error that drew ends
//	              its durable read.
var InBubble, Pair, AcceptDurably, Durable, NeverDurable, WakePeer, WakeDurable, Unpair any

// The datagram hooks (pollfd/bubble_dgram.go).
var Datagram, Sending, Reached, ReachedRaw, Unreached any

// MoveToShard is pollfd's Desc.moveToShard, a func(*pollfd.Desc, int) bool
// typed as Kick is: it moves a lazily opened Desc that nothing else refers
// to yet to another shard of its poller (pollfd/place.go), for a dialled
// socket placed beside its peer.
var MoveToShard any

// NewSema is pollfd's binary semaphore for one waiter, a
// func(durable bool) (park, wake func()), typed as Kick is: park sleeps
// until wake has given the token, and wake may come from any goroutine,
// in or out of a testing/synctest bubble, more than once. A durable park
// counts as durably blocked in a bubble, as sync.Cond.Wait does; a plain
// one does not. For internal/poll's fdMutex, whose waiters must not be
// sync.Cond's: a Cond woken from outside its waiter's bubble is fatal.
var NewSema any

// WatchDone is pollfd's watchDone (pollfd/bubble_ctx.go), a
// func(done <-chan struct{}, wake func()) (stop func()): called by a
// waiter about to park durably with a context whose Done channel is done,
// it keeps the bubble from idling while done is a channel made outside
// the bubble, and calls wake when done closes; stop, called after the
// park, ends that (nil for a nil done).
var WatchDone any
