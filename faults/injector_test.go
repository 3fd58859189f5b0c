package faults

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/internal/faultinject"
)

// The injector's own tests: the answers internal/poll gets around each
// system call.

func TestInjectorInvalid(t *testing.T) {
	_, err := New(1, Slicer{Min: 3, Max: 2}).newInjector(3, faultinject.Stream)
	require.Error(t, err)
	_, err = faultinject.New(New(1, Slicer{Min: 3, Max: 2}), 3, faultinject.Stream)
	require.Error(t, err, "the same through the registration")
	in, err := faultinject.New(New(1), 3, faultinject.Stream)
	require.NoError(t, err)
	require.IsType(t, (*injector)(nil), in)
}

// TestInjectorDirs: the contract's directions are faults' own.
func TestInjectorDirs(t *testing.T) {
	require.Equal(t, Read, Dir(faultinject.Read))
	require.Equal(t, Write, Dir(faultinject.Write))
}

// chunkPlan drives an injector as a descriptor writing total bytes would,
// each call passing all it is allowed, and returns the limits it was given.
func chunkPlan(t *testing.T, f *Faults, total int) []int {
	in, err := f.newInjector(3, faultinject.Stream)
	require.NoError(t, err)
	var limits []int
	for passed := 0; passed < total; {
		var st faultinject.Step
		if passed == 0 {
			st = in.Begin(faultinject.Write)
		} else {
			st = in.Before(faultinject.Write)
		}
		require.Zero(t, st.Wait)
		require.Positive(t, st.Limit)
		n := min(st.Limit, total-passed)
		in.Passed(faultinject.Write, n)
		passed += n
		limits = append(limits, n)
	}
	return limits
}

func TestInjectorSlicerReplays(t *testing.T) {
	a := chunkPlan(t, New(42, Slicer{Min: 2, Max: 9}), 5000)
	b := chunkPlan(t, New(42, Slicer{Min: 2, Max: 9}), 5000)
	c := chunkPlan(t, New(43, Slicer{Min: 2, Max: 9}), 5000)
	require.Equal(t, a, b)
	require.NotEqual(t, a, c)
	for _, n := range a[:len(a)-1] {
		require.True(t, n >= 2 && n <= 9, "chunk %d", n)
	}
}

// TestInjectorBoundaries: CloseAfter and ResetAfter end the stream at
// exactly N, whatever the calls ask for.
func TestInjectorBoundaries(t *testing.T) {
	f := New(1, CloseAfter{N: 10})
	in, err := f.newInjector(3, faultinject.Stream)
	require.NoError(t, err)
	require.Equal(t, 10, in.Begin(faultinject.Write).Limit)
	require.Equal(t, faultinject.ShutNone, in.Passed(faultinject.Write, 4))
	require.Equal(t, 6, in.Before(faultinject.Write).Limit)
	require.Equal(t, faultinject.ShutWrite, in.Passed(faultinject.Write, 6))
	require.Equal(t, syscall.EPIPE, in.Before(faultinject.Write).Err)
	require.EqualValues(t, 1, f.Stats().Closes)

	f = New(1, CloseAfter{N: 5, Dir: Read})
	in, _ = f.newInjector(3, faultinject.Stream)
	require.Equal(t, 5, in.Begin(faultinject.Read).Limit)
	in.Passed(faultinject.Read, 5)
	require.True(t, in.Begin(faultinject.Read).EOF)
	require.Zero(t, in.Begin(faultinject.Write).Limit, "the other direction is untouched")

	f = New(1, ResetAfter{N: 0})
	in, _ = f.newInjector(3, faultinject.Stream)
	st := in.Begin(faultinject.Write)
	require.Equal(t, syscall.ECONNRESET, st.Err)
	require.Equal(t, faultinject.ShutReset, st.Shut)
	require.Equal(t, syscall.ECONNRESET, in.Begin(faultinject.Read).Err, "a reset breaks both directions")
}

func TestInjectorDelays(t *testing.T) {
	f := New(1, Latency{Delay: time.Hour})
	in, _ := f.newInjector(3, faultinject.Stream)
	st := in.Begin(faultinject.Write)
	require.Greater(t, st.Wait, 59*time.Minute)
	require.True(t, in.Before(faultinject.Write).Park, "the wake-up is scheduled already")
	require.Zero(t, in.Begin(faultinject.Read).Wait, "latency is on writes by default")
	until := in.dirs[Write.index()].until
	require.True(t, in.Begin(faultinject.Write).Park, "a call after one that gave up waits for the same delay")
	require.Equal(t, until, in.dirs[Write.index()].until, "not for a new one")

	f = New(1, Latency{Delay: time.Millisecond})
	in, _ = f.newInjector(3, faultinject.Stream)
	require.Positive(t, in.Begin(faultinject.Write).Wait)
	time.Sleep(2 * time.Millisecond)
	require.Zero(t, in.Before(faultinject.Write).Wait, "the delay is over: the call passes")
	require.Positive(t, in.Begin(faultinject.Write).Wait, "and the next call has its own")

	f = New(1, Stall{After: 3})
	in, _ = f.newInjector(3, faultinject.Stream)
	require.Equal(t, 3, in.Begin(faultinject.Read).Limit)
	in.Passed(faultinject.Read, 3)
	require.True(t, in.Before(faultinject.Read).Park, "Stall.For zero: until the deadline")
	require.True(t, in.Before(faultinject.Read).Park)

	f = New(1, Bandwidth{BytesPerSecond: 1000})
	in, _ = f.newInjector(3, faultinject.Stream)
	st = in.Begin(faultinject.Write)
	require.Equal(t, 10, st.Limit, "a hundredth of a second's worth")
	in.Passed(faultinject.Write, 10)
	require.Positive(t, in.Before(faultinject.Write).Wait)
}

func TestInjectorAcceptBursts(t *testing.T) {
	f := New(1, AcceptErrors{Err: syscall.EMFILE, P: 1, Burst: 3})
	in, _ := f.newInjector(3, faultinject.Stream)
	var got []syscall.Errno
	for range 8 {
		got = append(got, in.Accept())
	}
	require.Equal(t, []syscall.Errno{syscall.EMFILE, syscall.EMFILE, syscall.EMFILE, 0, syscall.EMFILE, syscall.EMFILE, syscall.EMFILE, 0}, got,
		"P = 1 still lets an accept through between bursts")
	require.EqualValues(t, 6, f.Stats().Accepts)
	var none *injector
	require.Zero(t, none.Accept())
}

func TestInjectorDatagrams(t *testing.T) {
	f := New(1, Drop{P: 1, Dir: Write}, Duplicate{P: 1})
	in, _ := f.newInjector(3, faultinject.Datagrams)
	st := in.Begin(faultinject.Write)
	require.True(t, st.Drop)
	require.Zero(t, st.Limit, "datagrams are not sliced")
	require.False(t, in.Begin(faultinject.Read).Drop)
	dup, delay := in.Datagram()
	require.True(t, dup)
	require.Zero(t, delay)
}

func TestLog(t *testing.T) {
	var events []Event
	f := New(1, Slicer{Min: 4, Max: 4})
	f.Log = func(ev Event) { events = append(events, ev) }
	in, _ := f.newInjector(7, faultinject.Stream)
	in.Begin(faultinject.Read)
	in.Passed(faultinject.Read, 4)
	in.Before(faultinject.Read)
	require.Equal(t, []Event{
		{Kind: "slice", Dir: Read, Fd: 7, Offset: 0, N: 4},
		{Kind: "slice", Dir: Read, Fd: 7, Offset: 4, N: 4},
	}, events)
}
