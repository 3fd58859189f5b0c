//go:build linux

package pollfd_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/pollfd"
)

// TestCurrentBubble pins the stack-trace header currentBubble reads: 0
// outside every bubble, one id per bubble, shared by its goroutines. A
// runtime that changed the header would make this fail rather than leave
// fake time silently off.
func TestCurrentBubble(t *testing.T) {
	require.Zero(t, pollfd.CurrentBubble())
	var first, second, child uint64
	synctest.Test(t, func(t *testing.T) {
		first = pollfd.CurrentBubble()
		done := make(chan struct{})
		go func() {
			child = pollfd.CurrentBubble()
			close(done)
		}()
		<-done
	})
	synctest.Test(t, func(t *testing.T) { second = pollfd.CurrentBubble() })
	require.NotZero(t, first)
	require.Equal(t, first, child, "a goroutine is in its creator's bubble")
	require.NotEqual(t, first, second, "each bubble has its own id")
}
