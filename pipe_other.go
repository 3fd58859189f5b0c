//go:build !linux

package gatenet

import "os"

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
