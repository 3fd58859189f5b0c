//go:build linux

package gatenet

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	"github.com/gatenet/gatenet/pollfd"
)

// errFileClosing is what the fd layer reports for a closed file, as
// internal/poll's ErrFileClosing ("use of closed file"). File methods turn
// it into os.ErrClosed inside a *os.PathError, except SetDeadline and the
// RawConn methods, which return it bare, as *os.File does.
var errFileClosing = errors.New("use of closed file")

// errNotPollable is internal/poll's ErrNotPollable: the last epoll event
// for the descriptor was EPOLLERR alone.
var errNotPollable = errors.New("not pollable")

// errWaitUnsupported is what a wait on a descriptor epoll refused returns,
// as internal/poll's pollDesc.wait does.
var errWaitUnsupported = errors.New("waiting for unsupported file type")

// errClosing is the closed error a descriptor of this kind reports.
func errClosing(isFile bool) error {
	if isFile {
		return errFileClosing
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

// errCanceled and errTimeout are net's unexported dial errors for a
// cancelled or expired context: "operation was canceled" (Is
// context.Canceled) and "i/o timeout" (a net.Error with Timeout() true,
// Is context.DeadlineExceeded).
var (
	errCanceled = canceledError{}
	errTimeout  = timeoutError{}
)

type canceledError struct{}

func (canceledError) Error() string        { return "operation was canceled" }
func (canceledError) Is(target error) bool { return target == context.Canceled }

type timeoutError struct{}

func (timeoutError) Error() string        { return "i/o timeout" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Temporary() bool      { return true }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// mapContextErr is net's mapErr: a context's error as a dial reports it.
func mapContextErr(err error) error {
	switch err {
	case context.Canceled:
		return errCanceled
	case context.DeadlineExceeded:
		return errTimeout
	}
	return err
}

// errMissingAddress is net's error for an empty dial address.
var errMissingAddress = errors.New("missing address")

// wrapSyscallError wraps an Errno in *os.SyscallError naming the call,
// and leaves every other error (sentinels, io.EOF) alone, as net does.
func wrapSyscallError(name string, err error) error {
	if _, ok := err.(syscall.Errno); ok {
		return os.NewSyscallError(name, err)
	}
	return err
}
