//go:build linux

package gatenet_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/internal/testutil"
)

func TestWriteBuffers(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	c, s := gatenetTCPPair(t)
	// 3000 buffers (more than IOV_MAX), some empty, 8 MiB in all.
	var bufs net.Buffers
	var want bytes.Buffer
	for i := 0; i < 3000; i++ {
		b := bytes.Repeat([]byte{byte(i)}, (i*37)%5600)
		bufs = append(bufs, b)
		want.Write(b)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(s)
		got <- b
	}()
	n, err := c.WriteBuffers(&bufs)
	require.NoError(t, err)
	require.EqualValues(t, want.Len(), n)
	require.Empty(t, bufs, "consumed")
	n, err = c.Writev([][]byte{[]byte("tail"), nil, []byte("!")})
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	require.NoError(t, c.CloseWrite())
	want.WriteString("tail!")
	require.Equal(t, want.Bytes(), <-got)

	require.NoError(t, c.Close())
	_, err = c.WriteBuffers(&net.Buffers{[]byte("x")})
	var op *net.OpError
	require.True(t, errors.As(err, &op))
	require.Equal(t, "writev", op.Op)
	require.ErrorIs(t, err, net.ErrClosed)
}
