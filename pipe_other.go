//go:build !linux

package gatenet

import "os"

// Pipe is os.Pipe off Linux.
func Pipe() (r, w *File, err error) {
	or, ow, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &File{or}, &File{ow}, nil
}
