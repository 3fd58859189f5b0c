//go:build linux

package gatenet_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

func TestUDPSmoke(t *testing.T) {
	testutil.CheckLeaks(t)
	pc, err := gatenet.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer pc.Close()
	c, err := gatenet.Dial("udp4", pc.LocalAddr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	_, err = c.Write(nil) // a zero-length datagram
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, from, err := pc.ReadFrom(buf)
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))
	require.Equal(t, c.LocalAddr().String(), from.String())
	n, _, err = pc.ReadFrom(buf)
	require.NoError(t, err)
	require.Equal(t, 0, n)
	_, err = pc.WriteTo([]byte("back"), from)
	require.NoError(t, err)
	n, err = c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "back", string(buf[:n]))
	_, err = c.(*gatenet.UDPConn).WriteToUDP([]byte("x"), from.(*net.UDPAddr))
	require.ErrorIs(t, err, net.ErrWriteToConnected)
	nc, _ := net.Dial("udp4", pc.LocalAddr().String())
	defer nc.Close()
	_, nerr := nc.(*net.UDPConn).WriteToUDP([]byte("x"), from.(*net.UDPAddr))
	require.Equal(t, nerr.Error()[:len("write udp4 127.0.0.1:")], err.Error()[:len("write udp4 127.0.0.1:")])
}
