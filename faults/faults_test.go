package faults_test

import (
	"syscall"
	"testing"
	"time"

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
	_, err := faults.New(1, faults.Slicer{Min: 3, Max: 2}).NewInjector(3, false)
	require.Error(t, err)
}

// chunkPlan drives an injector as a descriptor writing total bytes would,
// each call passing all it is allowed, and returns the limits it was given.
func chunkPlan(t *testing.T, f *faults.Faults, total int) []int {
	in, err := f.NewInjector(3, false)
	require.NoError(t, err)
	var limits []int
	for passed, first := 0, true; passed < total; first = false {
		st := in.Before(faults.Write, first)
		require.Zero(t, st.Wait)
		require.Positive(t, st.Limit)
		n := min(st.Limit, total-passed)
		in.Passed(faults.Write, n)
		passed += n
		limits = append(limits, n)
	}
	return limits
}

func TestInjectorSlicerReplays(t *testing.T) {
	a := chunkPlan(t, faults.New(42, faults.Slicer{Min: 2, Max: 9}), 5000)
	b := chunkPlan(t, faults.New(42, faults.Slicer{Min: 2, Max: 9}), 5000)
	c := chunkPlan(t, faults.New(43, faults.Slicer{Min: 2, Max: 9}), 5000)
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
	for _, n := range a[:len(a)-1] {
		require.True(t, n >= 2 && n <= 9, "chunk %d", n)
	}
}

// TestInjectorBoundaries: CloseAfter and ResetAfter end the stream at
// exactly N, whatever the calls ask for.
func TestInjectorBoundaries(t *testing.T) {
	f := faults.New(1, faults.CloseAfter{N: 10})
	in, err := f.NewInjector(3, false)
	require.NoError(t, err)
	require.Equal(t, 10, in.Before(faults.Write, true).Limit)
	require.Equal(t, faults.ShutNone, in.Passed(faults.Write, 4))
	require.Equal(t, 6, in.Before(faults.Write, false).Limit)
	require.Equal(t, faults.ShutWrite, in.Passed(faults.Write, 6))
	require.Equal(t, syscall.EPIPE, in.Before(faults.Write, false).Err)
	require.EqualValues(t, 1, f.Stats().Closes)

	f = faults.New(1, faults.CloseAfter{N: 5, Dir: faults.Read})
	in, _ = f.NewInjector(3, false)
	require.Equal(t, 5, in.Before(faults.Read, true).Limit)
	in.Passed(faults.Read, 5)
	require.True(t, in.Before(faults.Read, true).EOF)
	require.Zero(t, in.Before(faults.Write, true).Limit, "the other direction is untouched")

	f = faults.New(1, faults.ResetAfter{N: 0})
	in, _ = f.NewInjector(3, false)
	st := in.Before(faults.Write, true)
	require.Equal(t, syscall.ECONNRESET, st.Err)
	require.Equal(t, faults.ShutReset, st.Shut)
	require.Equal(t, syscall.ECONNRESET, in.Before(faults.Read, true).Err, "a reset breaks both directions")
}

func TestInjectorDelays(t *testing.T) {
	f := faults.New(1, faults.Latency{Delay: time.Hour})
	in, _ := f.NewInjector(3, false)
	st := in.Before(faults.Write, true)
	require.Greater(t, st.Wait, 59*time.Minute)
	require.True(t, in.Before(faults.Write, false).Park, "the wake-up is scheduled already")
	require.Zero(t, in.Before(faults.Read, true).Wait, "latency is on writes by default")

	f = faults.New(1, faults.Stall{After: 3})
	in, _ = f.NewInjector(3, false)
	require.Equal(t, 3, in.Before(faults.Read, true).Limit)
	in.Passed(faults.Read, 3)
	require.True(t, in.Before(faults.Read, false).Park, "Stall.For zero: until the deadline")
	require.True(t, in.Before(faults.Read, false).Park)

	f = faults.New(1, faults.Bandwidth{BytesPerSecond: 1000})
	in, _ = f.NewInjector(3, false)
	st = in.Before(faults.Write, true)
	require.Equal(t, 10, st.Limit, "a hundredth of a second's worth")
	in.Passed(faults.Write, 10)
	require.Positive(t, in.Before(faults.Write, false).Wait)
}

func TestInjectorAcceptBursts(t *testing.T) {
	f := faults.New(1, faults.AcceptErrors{Err: syscall.EMFILE, P: 1, Burst: 3})
	in, _ := f.NewInjector(3, false)
	var got []syscall.Errno
	for range 8 {
		got = append(got, in.Accept())
	}
	require.Equal(t, []syscall.Errno{syscall.EMFILE, syscall.EMFILE, syscall.EMFILE, 0, syscall.EMFILE, syscall.EMFILE, syscall.EMFILE, 0}, got,
		"P = 1 still lets an accept through between bursts")
	require.EqualValues(t, 6, f.Stats().Accepts)
	var none *faults.Injector
	require.Zero(t, none.Accept())
}

func TestInjectorDatagrams(t *testing.T) {
	f := faults.New(1, faults.Drop{P: 1, Dir: faults.Write}, faults.Duplicate{P: 1})
	in, _ := f.NewInjector(3, true)
	st := in.Before(faults.Write, true)
	require.True(t, st.Drop)
	require.Zero(t, st.Limit, "datagrams are not sliced")
	require.False(t, in.Before(faults.Read, true).Drop)
	dup, delay := in.Datagram()
	require.True(t, dup)
	require.Zero(t, delay)
}

func TestLog(t *testing.T) {
	var events []faults.Event
	f := faults.New(1, faults.Slicer{Min: 4, Max: 4})
	f.Log = func(ev faults.Event) { events = append(events, ev) }
	in, _ := f.NewInjector(7, false)
	in.Before(faults.Read, true)
	in.Passed(faults.Read, 4)
	in.Before(faults.Read, false)
	require.Equal(t, []faults.Event{
		{Kind: "slice", Dir: faults.Read, Fd: 7, Offset: 0, N: 4},
		{Kind: "slice", Dir: faults.Read, Fd: 7, Offset: 4, N: 4},
	}, events)
}
