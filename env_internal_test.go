//go:build linux

package gatenet

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/envconf"
)

// TestFaultsFromEnvStrict: a GATENET_FAULTS value faults.Parse refuses
// (here the specs it once accepted as something else) is GATENET_FAULTS's
// *envconf.Error, whose cause is Parse's error word for word; with a valid
// value, an unknown GATENET_ name is the error instead.
func TestFaultsFromEnvStrict(t *testing.T) {
	for _, spec := range []string{
		"reset=18014398509481985k", "stall=18014398509481985k/1s", "bandwidth=9223372036854775807k",
		"latency=1ms/garbage", "reset=1/2/3", "eagain=0.5/junk", "slicer=1-7/1ms/zz", "bandwidth=1m/xyz",
		"reorder=0.5/1ms/2", "accept.read=EMFILE/0.1", "dial.write=hang", "dup.read=0.5", "slicer.=1-2",
		"latency=", "latency=+", "eagain=", "slicer=1-", "accept=EMFILE",
	} {
		_, perr := faults.Parse(spec)
		require.Error(t, perr, spec)
		f, err := faultsFromEnv(spec, []string{"GATENET_FAULTS=" + spec, "GATENET_POLER=x"})
		require.Nil(t, f, spec)
		e, ok := errors.AsType[*envconf.Error](err)
		require.True(t, ok, "%s: %T %v", spec, err, err)
		require.Equal(t, faults.EnvVar, e.Var, spec)
		require.Equal(t, spec, e.Value, spec)
		require.Equal(t, perr.Error(), e.Err.Error(), spec)
		require.Contains(t, err.Error(), perr.Error(), spec)
	}

	f, err := faultsFromEnv("slicer=1-7", []string{"GATENET_FAULTS=slicer=1-7", "GATENET_SOAK=1"})
	require.NoError(t, err)
	require.Equal(t, "seed=1;slicer=1-7", f.String())
	f, err = faultsFromEnv("", nil)
	require.NoError(t, err)
	require.Nil(t, f)
	_, err = faultsFromEnv("slicer=1-7", []string{"GATENET_FAULTS=slicer=1-7", "GATENET_FAULT=slicer=1-7"})
	e, ok := errors.AsType[*envconf.Error](err)
	require.True(t, ok, "%T %v", err, err)
	require.Equal(t, "GATENET_FAULT", e.Var)
	require.Contains(t, err.Error(), "did you mean GATENET_FAULTS?")
}
