//go:build !linux

package gatenet

import (
	"errors"
	"io"
	"os"
	"os/exec"
)

// PipeConfig configures a pipe. Off Linux Size is ignored.
type PipeConfig struct {
	// Size is the kernel buffer in bytes on Linux; ignored here.
	Size int
}

// Pipe is os.Pipe off Linux.
func (c PipeConfig) Pipe() (r, w *File, err error) { return Pipe() }

// Pipe is os.Pipe off Linux.
func Pipe() (r, w *File, err error) {
	or, ow, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &File{or}, &File{ow}, nil
}

// StdinPipe is (*exec.Cmd).StdinPipe off Linux, as a *File.
func StdinPipe(cmd *exec.Cmd) (*File, error) { return wrapCmdPipe(cmd, (*exec.Cmd).StdinPipe) }

// StdoutPipe is (*exec.Cmd).StdoutPipe off Linux, as a *File; os/exec's
// Wait closes it there.
func StdoutPipe(cmd *exec.Cmd) (*File, error) { return wrapCmdPipe(cmd, (*exec.Cmd).StdoutPipe) }

// StderrPipe is (*exec.Cmd).StderrPipe off Linux, as a *File; os/exec's
// Wait closes it there.
func StderrPipe(cmd *exec.Cmd) (*File, error) { return wrapCmdPipe(cmd, (*exec.Cmd).StderrPipe) }

// wrapCmdPipe makes a *File of the *os.File os/exec's pipe method returns.
func wrapCmdPipe[E io.Closer](cmd *exec.Cmd, pipe func(*exec.Cmd) (E, error)) (*File, error) {
	if cmd == nil {
		return nil, errors.New("gatenet: nil *exec.Cmd")
	}
	end, err := pipe(cmd)
	if err != nil {
		return nil, err
	}
	return &File{any(end).(*os.File)}, nil
}
