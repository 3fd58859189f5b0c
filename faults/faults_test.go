package faults_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/faults"
)

func TestParseRoundTrip(t *testing.T) {
	for _, spec := range []string{
		"seed=42;slicer=1-7",
		"seed=1;slicer.read=1-3/1ms;latency.write=5ms+2ms;bandwidth=1048576",
		"seed=9;stall.read=4096/100ms;reset=10;close.read=20",
		"seed=3;eagain=0.5;wakeup.write=0.25",
		"seed=3;accept=EMFILE/0.1/5;dial=ECONNREFUSED/0.5;dial=hang/1",
		"seed=3;drop=0.1;dup=0.2;reorder=0.3/10ms",
	} {
		f, err := faults.Parse(spec)
		require.NoError(t, err, spec)
		again, err := faults.Parse(f.String())
		require.NoError(t, err, f.String())
		require.Equal(t, f.String(), again.String(), spec)
		require.Equal(t, f.Faults, again.Faults, spec)
	}
	f, err := faults.Parse("slicer=1-7;bandwidth=1m;seed=5")
	require.NoError(t, err)
	require.Equal(t, uint64(5), f.Seed)
	require.Equal(t, []faults.Fault{faults.Slicer{Min: 1, Max: 7}, faults.Bandwidth{BytesPerSecond: 1 << 20}}, f.Faults)
	f, err = faults.Parse("  ")
	require.NoError(t, err)
	require.Nil(t, f)
}

func TestParseBadInput(t *testing.T) {
	for _, spec := range []string{
		"slicer", "slicer=7-1", "slicer=0-3", "slicer=a-b", "latency=-1ms", "bandwidth=0",
		"eagain=2", "drop=-0.1", "accept=EWHAT/0.1", "accept=EMFILE/x", "nosuch=1",
		"slicer.up=1-2", "seed=-1", "reset=-5", "stall=1/-1s",
	} {
		f, err := faults.Parse(spec)
		require.Error(t, err, spec)
		require.Nil(t, f, spec)
		require.Contains(t, err.Error(), "faults:", spec)
	}
}

func TestValidate(t *testing.T) {
	require.NoError(t, (*faults.Faults)(nil).Validate())
	require.NoError(t, faults.New(1).Validate())
	require.Error(t, faults.New(1, nil).Validate())
	require.Error(t, faults.New(1, faults.AcceptErrors{P: 0.5}).Validate(), "an errno is required")
}
