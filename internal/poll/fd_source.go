//go:build linux

package poll

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// A copy whose destination already failed (closed, past its deadline)
// answers as net's and os's copies do, which read the source before they
// write: with the source's own error if it has one, with nothing at the
// source's end, after a wait while the source is idle, and with the
// destination's error only once the source has bytes for it. These look
// at the source without taking anything from it, so those bytes stay
// there, where os's and net's copies would have read them into a buffer
// or a pipe and lost them.

// SourceState is what a read of a copy's source would find now.
type SourceState int

const (
	SourceHasData SourceState = iota // bytes, or a kind of file PeekSource cannot look into
	SourceIdle                       // nothing yet: the read would wait
	SourceAtEnd                      // end of stream
)

// PeekSource says what a read of sysfd would find, taking nothing from
// it: for a pipe, poll(2) and FIONREAD (TIOCINQ); for a socket, recv(2) of
// one byte with MSG_PEEK, which also returns a pending error (taking it,
// as the read would); for a regular file, its offset against its size.
func PeekSource(sysfd int) (SourceState, error) {
	var st unix.Stat_t
	if unix.Fstat(sysfd, &st) != nil {
		return SourceHasData, nil
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		readable, err := pollNow(sysfd, unix.POLLIN)
		if err != nil || !readable {
			return SourceIdle, err
		}
		if n, err := unix.IoctlGetInt(sysfd, unix.TIOCINQ); err == nil && n == 0 {
			return SourceAtEnd, nil // readable and empty: no writer left
		}
	case unix.S_IFSOCK:
		var b [1]byte
		for {
			n, _, err := unix.Recvfrom(sysfd, b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return SourceIdle, nil
			case err != nil:
				return SourceHasData, err
			case n == 0:
				return SourceAtEnd, nil
			}
			return SourceHasData, nil
		}
	case unix.S_IFREG:
		if off, err := unix.Seek(sysfd, 0, io.SeekCurrent); err == nil && off >= st.Size {
			return SourceAtEnd, nil
		}
	}
	return SourceHasData, nil
}

// lookAtSource looks once at what a read of fd, a copy's source, would
// find, under fd's read lock (held: the caller's, which lookAtSource lets
// go of), and when nothing is there yet waits for fd's next edge and says
// SourceIdle (look again). err is fd's own: closed, past its deadline, a
// socket's pending error. An fd that cannot wait counts as having bytes.
func (fd *FD) lookAtSource(held bool) (SourceState, error) {
	if !held {
		if err := fd.readLock(); err != nil {
			return 0, err
		}
	}
	defer fd.readUnlock()
	if err := fd.Prepare(pollfd.ModeRead); err != nil {
		return 0, err
	}
	state, err := PeekSource(fd.Sysfd)
	switch {
	case err != nil:
		return 0, err
	case state != SourceIdle:
		return state, nil
	case !fd.Pollable():
		return SourceHasData, nil
	}
	if err := fd.Wait(pollfd.ModeRead); err != nil {
		return 0, err
	}
	return SourceIdle, nil
}

// AwaitSource waits until a read of fd, a copy's source, would not block,
// and says whether it would find fd's end; err is fd's own. It takes
// nothing from fd.
func (fd *FD) AwaitSource() (atEnd bool, err error) {
	for {
		state, err := fd.lookAtSource(false)
		if err != nil || state != SourceIdle {
			return state == SourceAtEnd, err
		}
	}
}

// sourceFirst is spliceStep's answer when dst failed (dstErr) before a
// byte moved: src's error, or nothing at src's end, or, while src is
// idle, a wait for it and again (dst may be usable by then: a new
// deadline), or dstErr once src has bytes. held says the caller holds
// src's read lock, which sourceFirst lets go of.
func sourceFirst(src *FD, dstErr error, held bool) (n int, again bool, err error, srcErr bool) {
	state, err := src.lookAtSource(held)
	switch {
	case err != nil:
		return 0, false, err, true
	case state == SourceAtEnd:
		return 0, false, nil, false
	case state == SourceIdle:
		return 0, true, nil, false
	}
	return 0, false, dstErr, false
}
