//go:build linux

package poll

import (
	"github.com/gatenet/gatenet/internal/pollhook"
	"github.com/gatenet/gatenet/pollfd"
)

var moveToShard = pollhook.MoveToShard.(func(*pollfd.Desc, int) bool)

// MoveToShard moves the descriptor's registration to shard i of its
// poller (pollfd/place.go), which only a socket initialised with
// InitSocket that has not yet waited, been watched or had a deadline
// allows; it reports whether it moved. Only the socket's maker may call
// it, before it hands the socket to anyone: a dialled socket, once its
// connect finished without waiting, is placed beside its peer.
func (fd *FD) MoveToShard(i int) bool { return fd.pd != nil && moveToShard(fd.pd, i) }
