//go:build linux

package poll

import (
	"errors"
	"net"
	"os"

	"github.com/gatenet/gatenet/pollfd"
)

// ErrFileClosing is what an FD made by NewFile reports once closed, as
// internal/poll's ErrFileClosing ("use of closed file"). gatenet's File
// methods turn it into os.ErrClosed inside a *os.PathError, except
// SetDeadline and the RawConn methods, which return it bare, as *os.File
// does. A socket's FD reports net.ErrClosed instead.
var ErrFileClosing = errors.New("use of closed file")

// errNotPollable is internal/poll's ErrNotPollable: the last epoll event
// for the descriptor was EPOLLERR alone.
var errNotPollable = errors.New("not pollable")

// errWaitUnsupported is what a wait on a descriptor epoll refused returns,
// as internal/poll's pollDesc.wait does.
var errWaitUnsupported = errors.New("waiting for unsupported file type")

// errClosing is the closed error a descriptor of this kind reports.
func errClosing(isFile bool) error {
	if isFile {
		return ErrFileClosing
	}
	return net.ErrClosed
}

// convertPollErr maps pollfd's errors to the standard library's, as
// internal/poll's convertErr does.
func convertPollErr(err error, isFile bool) error {
	switch err {
	case nil:
		return nil
	case pollfd.ErrClosing:
		return errClosing(isFile)
	case pollfd.ErrTimeout:
		return os.ErrDeadlineExceeded
	case pollfd.ErrNotPollable:
		return errNotPollable
	}
	return err
}
