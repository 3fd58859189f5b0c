//go:build linux

package gatenet

import (
	"context"
	"errors"
	"os"
	"syscall"
)

// The mapping of the poller's errors to net's and os's sentinels is the
// descriptor layer's: internal/poll/errors.go.

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
