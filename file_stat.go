//go:build linux

package gatenet

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"time"
)

// fileStat is File.Stat's os.FileInfo, built from fstat(2) as os builds
// its own (os/stat_linux.go), so modes and Sys match *os.File's.
type fileStat struct {
	name    string
	size    int64
	mode    fs.FileMode
	modTime time.Time
	sys     syscall.Stat_t
}

func (st *fileStat) fill(name string) {
	st.name = filepath.Base(name)
	st.size = st.sys.Size
	st.modTime = time.Unix(st.sys.Mtim.Unix())
	st.mode = fileMode(st.sys.Mode)
}

func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

func (st *fileStat) Name() string       { return st.name }
func (st *fileStat) Size() int64        { return st.size }
func (st *fileStat) Mode() fs.FileMode  { return st.mode }
func (st *fileStat) ModTime() time.Time { return st.modTime }
func (st *fileStat) IsDir() bool        { return st.mode.IsDir() }
func (st *fileStat) Sys() any           { return &st.sys }
