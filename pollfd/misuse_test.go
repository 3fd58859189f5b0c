//go:build linux

package pollfd_test

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/testutil"
	"github.com/gatenet/gatenet/pollfd"
)

// Misuse of the package's own API gets an error, never a panic or a
// list or poller left locked: nil and zero values, a nil context, out of
// range shards, and Open racing Close.

func TestZeroAndNilPoller(t *testing.T) {
	testutil.CheckLeaks(t)
	r, _ := newPipe(t)
	for name, p := range map[string]*pollfd.Poller{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			for op, open := range map[string]func() (*pollfd.Desc, error){
				"Open":      func() (*pollfd.Desc, error) { return p.Open(r) },
				"OpenShard": func() (*pollfd.Desc, error) { return p.OpenShard(r, 1) },
				"OpenLazy":  func() (*pollfd.Desc, error) { return p.OpenLazy(r, -1) },
			} {
				d, err := open()
				require.Nil(t, d, op)
				require.ErrorContains(t, err, "Poller not made by New or Default", op)
			}
			require.ErrorContains(t, p.Close(), "Poller not made by New or Default")
			require.Zero(t, p.Shards())
			require.Zero(t, p.ShardFor(42))
			require.Zero(t, p.Stats())
			require.Empty(t, p.ShardStats())
			require.False(t, p.IsPollDescriptor(r))
		})
	}
	pollfd.Default() // a nil Poller is not the default one either
	require.ErrorContains(t, (*pollfd.Poller)(nil).Close(), "Poller not made by New or Default")
}

// TestZeroAndNilDesc: a nil Desc (the result of an Open whose error was
// dropped) and a zero one fail every call with an error for which
// errors.Is(err, os.ErrInvalid) holds, as os's nil *File does, or do
// nothing; none panics.
func TestZeroAndNilDesc(t *testing.T) {
	testutil.CheckLeaks(t)
	var l pollfd.ReadyList
	defer l.Close()
	for name, d := range map[string]*pollfd.Desc{"zero": {}, "nil": nil} {
		t.Run(name, func(t *testing.T) {
			for op, call := range map[string]func() error{
				"Prepare":     func() error { return d.Prepare(pollfd.ModeRead) },
				"Wait":        func() error { return d.Wait(pollfd.ModeRead) },
				"WaitContext": func() error { return d.WaitContext(context.Background(), pollfd.ModeWrite) },
				"SetDeadline": func() error { return d.SetDeadline(time.Now(), pollfd.ModeReadWrite) },
				"Close":       func() error { return d.Close() },
				"Watch":       func() error { return d.Watch(&l, "x") },
				"WatchWrite":  func() error { return d.WatchWrite(&l, true) },
			} {
				require.ErrorIs(t, call(), os.ErrInvalid, op)
			}
			d.Unblock()
			d.Unwatch()
			d.NotifyReady()
			d.ReleaseReads()
			require.Nil(t, d.WatchCookie(&l))
			require.Equal(t, -1, d.Fd())
			require.Equal(t, -1, d.Shard())
			require.Nil(t, d.Poller())
		})
	}
}

func TestOpenShardExtremes(t *testing.T) {
	testutil.CheckLeaks(t)
	p := testutil.NewPoller(t, pollfd.Options{Shards: 3})
	r, _ := newPipe(t)
	for _, i := range []int{math.MinInt, math.MinInt + 1, -4, math.MaxInt} {
		d, err := p.OpenShard(r, i)
		require.NoError(t, err, "shard %d", i)
		want := -(i % 3)
		if i >= 0 {
			want = i % 3
		}
		require.Equal(t, want, d.Shard(), "shard %d", i)
		closeDesc(t, d)
	}
	require.Equal(t, 1024, pollfd.ShardsFor(math.MaxInt), "capped at what New takes")
	require.Equal(t, 1, pollfd.ShardsFor(math.MinInt))
	require.Equal(t, 2, pollfd.ShardsFor(5))
	require.Equal(t, 4, pollfd.ShardsFor(16))
}

// TestOptionsRoundTrip: every Options String writes, ParseOptions reads
// back as it was, shards included; a malformed shard part is an error,
// and an error leaves the Options zero.
func TestOptionsRoundTrip(t *testing.T) {
	for _, strategy := range []pollfd.Strategy{pollfd.Nested, pollfd.Dedicated} {
		for _, harvest := range []bool{false, true} {
			for _, rpark := range []bool{false, true} {
				for _, shards := range []int{0, 2, 16, 1024} {
					o := pollfd.Options{Strategy: strategy, Harvest: harvest, RuntimePark: rpark, Shards: shards}
					got, err := pollfd.ParseOptions(o.String())
					require.NoError(t, err, o.String())
					require.Equal(t, o, got, o.String())
				}
			}
		}
	}
	got, err := pollfd.ParseOptions("nested/1-shards") // String writes no /1-shards, but it means 1
	require.NoError(t, err)
	require.Equal(t, 1, got.Shards)
	for _, bad := range []string{"nested/", "nested/2", "nested/0-shards", "nested/-1-shards",
		"nested/x-shards", "nested/1025-shards", "nested/2-shards/3-shards", "bogus/2-shards", "nested+bogus/2-shards"} {
		got, err := pollfd.ParseOptions(bad)
		require.Error(t, err, bad)
		require.Zero(t, got, bad)
		require.ErrorContains(t, err, "pollfd: ", bad)
	}
}

func TestZeroReadyList(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	p := testutil.NewPoller(t, pollfd.Options{})
	r, w := newPipe(t)
	d := open(t, p, r)
	defer closeDesc(t, d)
	var l pollfd.ReadyList
	require.NoError(t, d.Watch(&l, "r"))
	// A Next asleep on the zero list is woken by the report.
	got := make(chan any, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		v, err := l.Next(ctx)
		if err != nil {
			v = err
		}
		got <- v
	}()
	time.Sleep(20 * time.Millisecond)
	_, err := unix.Write(w, []byte{1})
	require.NoError(t, err)
	require.Equal(t, "r", <-got)
	l.Close()
	require.Zero(t, l.Len())
	_, err = l.Next(context.Background())
	require.ErrorIs(t, err, pollfd.ErrListClosed)
	l.Close() // twice: nothing
}

func TestReadyListNilArguments(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, time.Minute)
	p := testutil.NewPoller(t, pollfd.Options{})
	r, w := newPipe(t)
	d := open(t, p, r)
	defer closeDesc(t, d)

	// A nil ReadyList: errors, no panic.
	var nl *pollfd.ReadyList
	require.ErrorContains(t, d.Watch(nl, "x"), "nil ReadyList")
	require.Zero(t, nl.Len())
	nl.Close()
	_, err := nl.Next(context.Background())
	require.ErrorContains(t, err, "nil ReadyList")

	// A nil context is Background, and the list stays usable after.
	l := pollfd.NewReadyList()
	defer l.Close()
	require.NoError(t, d.Watch(l, "r"))
	_, err = unix.Write(w, []byte{1})
	require.NoError(t, err)
	//lint:ignore SA1012 a nil context is documented to mean Background: that is what is tested
	v, err := l.Next(nil)
	require.NoError(t, err)
	require.Equal(t, "r", v)
	require.Zero(t, l.Len())

	// And WaitContext's: a wait with no end but the descriptor's (it
	// panicked on ctx.Done()).
	d.Unwatch()
	var b [1]byte
	_, err = unix.Read(r, b[:])
	require.NoError(t, err)
	require.NoError(t, d.Prepare(pollfd.ModeRead))
	require.NoError(t, d.SetDeadline(time.Now().Add(time.Millisecond), pollfd.ModeRead))
	//lint:ignore SA1012 a nil context is documented to mean Background: that is what is tested
	require.ErrorIs(t, d.WaitContext(nil, pollfd.ModeRead), pollfd.ErrTimeout)
}

// TestOpenRacesPollerClose: an Open concurrent with Close either fails
// with os.ErrClosed or makes Close refuse with ErrPollerBusy, never both
// succeed (which left a Desc registered with a closed poller).
func TestOpenRacesPollerClose(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	r, _ := newPipe(t)
	raced := 0
	for round := 0; round < 400; round++ {
		p, err := pollfd.New(pollfd.Options{Shards: 1 + round%2})
		require.NoError(t, err)
		opened := make(chan *pollfd.Desc, 1)
		go func() {
			d, err := p.OpenLazy(r, -1)
			if err != nil {
				require.ErrorIs(t, err, os.ErrClosed)
				d = nil
			}
			opened <- d
		}()
		cerr := p.Close()
		d := <-opened
		switch {
		case d != nil && cerr == nil:
			t.Fatalf("round %d: both Open and Close succeeded", round)
		case d != nil:
			require.ErrorIs(t, cerr, pollfd.ErrPollerBusy)
			raced++
			closeDesc(t, d)
			require.NoError(t, p.Close())
		default:
			require.NoError(t, cerr)
		}
		require.Zero(t, p.Stats().Registered)
	}
	t.Logf("%d of 400 rounds opened before Close decided", raced)
}

// TestLateIdleWakeAfterClose: the dedicated loop's idle wake-up, which a
// Desc.Close that empties the shard writes, is never written once
// Poller.Close has closed the eventfd, whose number may be a new file's
// by then. A Desc.Close racing Poller.Close used to write 8 bytes into
// whatever file reused the number; here the late wake-up is made certain.
func TestLateIdleWakeAfterClose(t *testing.T) {
	testutil.CheckLeaks(t)
	p, err := pollfd.New(pollfd.Options{Strategy: pollfd.Dedicated})
	require.NoError(t, err)
	wakeFd := p.WakeFd()
	require.NoError(t, p.Close())
	var pipe [2]int
	require.NoError(t, unix.Pipe2(pipe[:], unix.O_NONBLOCK|unix.O_CLOEXEC))
	defer unix.Close(pipe[0])
	defer unix.Close(pipe[1])
	if pipe[1] != wakeFd && pipe[0] != wakeFd {
		t.Skipf("the eventfd's number %d went to no end of the new pipe %v", wakeFd, pipe)
	}
	p.LateIdleWake()
	var b [16]byte
	n, err := unix.Read(pipe[0], b[:])
	require.ErrorIs(t, err, unix.EAGAIN, "read %d bytes nobody wrote", n)
}

// TestWaitOnClosedDescHarvestsNothing: a Wait on a Desc whose poller is
// closed fails with ErrClosing and reads no epoll instance. It harvested
// first: epoll_wait on the closed shard's descriptor number, which an
// epoll instance made since may hold, taking that one's edge-triggered
// events and dropping them as stale, so that its own waiter never heard
// of data that had come.
func TestWaitOnClosedDescHarvestsNothing(t *testing.T) {
	testutil.CheckLeaks(t)
	p, err := pollfd.New(pollfd.Options{Strategy: pollfd.Nested, Harvest: true})
	require.NoError(t, err)
	r, _ := newPipe(t)
	d, err := p.Open(r)
	require.NoError(t, err)
	// The poller's epoll numbers, which another instance takes over below.
	var epolls []int
	for fd := range 4096 {
		if p.IsPollDescriptor(fd) {
			if link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && link == "anon_inode:[eventpoll]" {
				epolls = append(epolls, fd)
			}
		}
	}
	require.NotEmpty(t, epolls)
	d.Unblock()
	require.NoError(t, d.Close())
	require.NoError(t, p.Close())

	other, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(other)
	for _, fd := range epolls {
		if fd != other {
			require.NoError(t, unix.Dup3(other, fd, unix.O_CLOEXEC))
			defer unix.Close(fd)
		}
	}
	r2, w2 := newPipe(t)
	require.NoError(t, unix.EpollCtl(other, unix.EPOLL_CTL_ADD, r2, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(r2)}))
	_, err = unix.Write(w2, []byte{1})
	require.NoError(t, err)

	require.ErrorIs(t, d.Wait(pollfd.ModeRead), pollfd.ErrClosing)
	events := make([]unix.EpollEvent, 4)
	n, err := unix.EpollWait(other, events, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the other epoll's edge was taken")
	require.Equal(t, int32(r2), events[0].Fd)
}
