//go:build !linux

package gatenet

import "os"

// File is *os.File off Linux: gatenet delegates to the standard library.
type File struct{ *os.File }

// NewFile is os.NewFile off Linux.
func NewFile(fd uintptr, name string) *File {
	f := os.NewFile(fd, name)
	if f == nil {
		return nil
	}
	return &File{f}
}

// OpenFile is os.OpenFile off Linux.
func OpenFile(name string, flag int, perm os.FileMode) (*File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &File{f}, nil
}
