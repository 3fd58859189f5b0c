//go:build linux

package poll

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSameDescription: a descriptor and its dup share one open file
// description; the two ends of a pipe, one inode, do not. Both with
// kcmp(2) and with the guess used where the kernel refuses it.
func TestSameDescription(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	d, err := unix.Dup(p[0])
	require.NoError(t, err)
	defer unix.Close(d)
	for name, same := range map[string]func(a, b int) bool{"kcmp": sameDescription, "guess": sameFileAndFlags} {
		require.True(t, same(p[0], d), "%s: a dup", name)
		require.False(t, same(p[0], p[1]), "%s: the other end", name)
	}
}
