//go:build linux

package gatenet_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/envconf"
	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// TestEnvErrors runs TestEnvErrorsChild in a child process for each
// GATENET_ variable set to each of a few invalid values, and for a
// GATENET_ name gatenet does not read: every kind of constructor must
// refuse with an error naming the variable, its value and the valid
// syntax (env.go).
func TestEnvErrors(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"GATENET_POLLER", "bogus"},
		{"GATENET_POLLER", "nested+harvest+harvest"},
		{"GATENET_SHARDS", "0"},
		{"GATENET_SHARDS", "two"},
		{"GATENET_SHARDS", "100000"},
		{"GATENET_FAULTS", "slicer=9-1"},
		{"GATENET_FAULTS", "nonsense"},
		{"GATENET_FAULTS", "reset=1/2/3"},
		{"GATENET_POLER", "nested"},
		{"GATENET_FAULT", "slicer=1-7"},
	} {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			testutil.RunChild(t, "TestEnvErrorsChild", tc.name+"="+tc.value, "GATENET_ENV_CHILD="+tc.name)
		})
	}
}

func TestEnvErrorsChild(t *testing.T) {
	name := os.Getenv("GATENET_ENV_CHILD")
	if name == "" {
		t.Skip("run by TestEnvErrors")
	}
	value := os.Getenv(name)
	check := func(what string, err error) {
		t.Helper()
		require.Error(t, err, what)
		e, ok := errors.AsType[*envconf.Error](err)
		require.True(t, ok, "%s: %T %v is not an *envconf.Error", what, err, err)
		require.Equal(t, name, e.Var, what)
		require.Equal(t, value, e.Value, what)
		require.NotEmpty(t, e.Want, what)
		require.Contains(t, err.Error(), name, what)
		require.Contains(t, err.Error(), e.Want, what)
	}

	_, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	check("Listen", err)
	_, err = gatenet.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	check("ListenUnix", err)
	_, err = gatenet.ListenPacket("udp4", "127.0.0.1:0")
	check("ListenPacket", err)

	peer, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer peer.Close()
	_, err = gatenet.Dial("tcp4", peer.Addr().String())
	check("Dial", err)

	_, _, err = gatenet.Pipe()
	check("Pipe", err)

	// A Poller of one's own does not read GATENET_POLLER or
	// GATENET_SHARDS, but GATENET_FAULTS and the unknown names still
	// apply.
	own, err := pollfd.New(pollfd.DefaultOptions())
	require.NoError(t, err)
	defer own.Close()
	ln, err := (&gatenet.ListenConfig{Poller: own}).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if name == "GATENET_POLLER" || name == "GATENET_SHARDS" {
		require.NoError(t, err, "a Poller of its own")
		require.NoError(t, ln.Close())
	} else {
		check("ListenConfig with a Poller of its own", err)
	}

	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	_, err = gatenet.OpenFile(fifo, os.O_RDWR, 0)
	check("OpenFile", err)

	c, err := net.Dial("tcp4", peer.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	cf, err := c.(*net.TCPConn).File()
	require.NoError(t, err)
	defer cf.Close()
	_, err = gatenet.FileConn(cf)
	check("FileConn", err)

	// NewFile has no error to return: every operation gives it, and Close
	// still closes the descriptor.
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[1])
	f := gatenet.NewFile(uintptr(p[0]), "r")
	_, err = f.Read(make([]byte, 1))
	check("NewFile's Read", err)
	var pe *os.PathError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "read", pe.Op)
	require.True(t, strings.HasPrefix(err.Error(), "read r: gatenet: invalid "+name+"="), err.Error())
	check("NewFile's SetReadDeadline", f.SetReadDeadline(time.Now().Add(time.Hour)))
	_, err = f.Stat()
	check("NewFile's Stat", err)
	require.NoError(t, f.Close())
	require.Equal(t, unix.EBADF, unix.Close(p[0]), "Close closed the descriptor")
}
