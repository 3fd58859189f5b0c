//go:debug multipathtcp=3

//go:build linux

package mptcpgodebug_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
)

// TestCompiledGODEBUG: multipathtcp=3 (dialers only) compiled into this
// test binary reaches gatenet's defaults as it reaches net's, unless the
// GODEBUG environment variable says otherwise.
func TestCompiledGODEBUG(t *testing.T) {
	if strings.Contains(os.Getenv("GODEBUG"), "multipathtcp=") {
		t.Skip("GODEBUG in the environment sets multipathtcp")
	}
	var nlc net.ListenConfig
	var nd net.Dialer
	require.False(t, nlc.MultipathTCP(), "net reads the directive")
	require.True(t, nd.MultipathTCP(), "net reads the directive")
	var lc gatenet.ListenConfig
	var d gatenet.Dialer
	require.Equal(t, nlc.MultipathTCP(), lc.MultipathTCP())
	require.Equal(t, nd.MultipathTCP(), d.MultipathTCP())
}
