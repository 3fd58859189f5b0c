//go:build linux

package gatenet_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/testutil"
)

// The fault layer is a hook at the system-call step of each of
// internal/poll's loops. These tests reach every kind of loop through a
// fault only that loop's hook can inject: writev, and the datagram calls
// run by ioLoop (recvfrom, recvmsg, sendto, sendmsg) beside read and
// write.

// TestFaultsWritev: WriteBuffers is cut into the slicer's chunks and
// arrives whole.
func TestFaultsWritev(t *testing.T) {
	testutil.CheckLeaks(t)
	f := faults.New(1, faults.Slicer{Min: 1, Max: 7, Dir: faults.Write})
	c, s := faultyPair(t, f, nil)
	want := make([]byte, 0, 3000)
	bufs := make(net.Buffers, 0, 30)
	for i := range 30 {
		b := make([]byte, 100)
		for j := range b {
			b[j] = byte(i)
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	done := make(chan error, 1)
	go func() {
		n, err := c.WriteBuffers(&bufs)
		if err == nil && n != int64(len(want)) {
			err = errors.New("short WriteBuffers")
		}
		done <- err
	}()
	got := make([]byte, len(want))
	_, err := readFull(s, got)
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.Equal(t, want, got)
	require.GreaterOrEqual(t, f.Stats().Chunks, int64(len(want)/7), "every chunk is at most 7 bytes")
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// TestFaultsDatagramCalls: every datagram write call is duplicated and
// reordered, and every datagram read call loses what it receives.
func TestFaultsDatagramCalls(t *testing.T) {
	testutil.CheckLeaks(t)
	pair := func(t *testing.T) (w, r *gatenet.UDPConn) {
		w, r = listenUDP(t), listenUDP(t)
		t.Cleanup(func() {
			r.Close()
			w.Close()
		})
		return w, r
	}
	// receive reads from r with read the want datagrams the test expects
	// (each within a minute, a hang detector), then goes on until none
	// comes for quiet, so that any beyond them is caught too; it returns
	// what it read. A quiet wait that ends with a datagram still queued in
	// the kernel passed before the read looked (a loaded machine): it is
	// waited again, longer.
	receive := func(t *testing.T, r syscall.Conn, read func([]byte) (int, error), setDeadline func(time.Time) error, want int, quiet time.Duration) []byte {
		var got []byte
		buf := make([]byte, 16)
		readOne := func(d time.Duration) bool {
			setDeadline(time.Now().Add(d))
			n, err := read(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return false
			}
			require.NoError(t, err)
			require.Equal(t, 1, n)
			got = append(got, buf[0])
			return true
		}
		for len(got) < want {
			if !readOne(time.Minute) {
				break // too few: the caller's check says so
			}
		}
		testutil.RetrySlow(t, quiet, "the read looked at the datagrams queued", func(d time.Duration) bool {
			for readOne(d) { // each datagram restarts the quiet wait
			}
			return inq(t, r) > 0
		})
		return got
	}
	sends := []struct {
		name string
		send func(w, r *gatenet.UDPConn, b []byte) (int, error)
	}{
		{"WriteToUDP", func(w, r *gatenet.UDPConn, b []byte) (int, error) {
			return w.WriteToUDP(b, r.LocalAddr().(*net.UDPAddr))
		}},
		{"WriteMsgUDP", func(w, r *gatenet.UDPConn, b []byte) (int, error) {
			n, _, err := w.WriteMsgUDP(b, nil, r.LocalAddr().(*net.UDPAddr))
			return n, err
		}},
	}
	for _, sc := range sends {
		t.Run(sc.name+"/duplicate", func(t *testing.T) {
			w, r := pair(t)
			require.NoError(t, gatenet.InjectFaults(w, faults.New(1, faults.Duplicate{P: 1})))
			for i := range 3 {
				n, err := sc.send(w, r, []byte{byte(i)})
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			got := receive(t, r, func(b []byte) (int, error) { n, _, err := r.ReadFromUDP(b); return n, err }, r.SetReadDeadline, 6, 200*time.Millisecond)
			require.Equal(t, []byte{0, 0, 1, 1, 2, 2}, got)
		})
		t.Run(sc.name+"/reorder", func(t *testing.T) {
			w, r := pair(t)
			f := faults.New(1, faults.Reorder{P: 1, Delay: 50 * time.Millisecond})
			require.NoError(t, gatenet.InjectFaults(w, f))
			for i := range 3 {
				n, err := sc.send(w, r, []byte{byte(i)})
				require.NoError(t, err)
				require.Equal(t, 1, n)
			}
			got := receive(t, r, func(b []byte) (int, error) { n, _, err := r.ReadFromUDP(b); return n, err }, r.SetReadDeadline, 3, 500*time.Millisecond)
			require.ElementsMatch(t, []byte{0, 1, 2}, got, "each held datagram is sent once, to the address given")
			require.EqualValues(t, 3, f.Stats().Reordered)
		})
	}
	t.Run("WriteBuffers/duplicate", func(t *testing.T) {
		w, r := udpLoopbackPair(t)
		require.NoError(t, gatenet.InjectFaults(w, faults.New(1, faults.Duplicate{P: 1})))
		bufs := net.Buffers{{'a'}, {'b'}}
		n, err := w.WriteBuffers(&bufs)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		buf := make([]byte, 16)
		for range 2 {
			r.SetReadDeadline(time.Now().Add(time.Second))
			n, _, err := r.ReadFromUDP(buf)
			require.NoError(t, err)
			require.Equal(t, "ab", string(buf[:n]), "the buffers are one datagram, sent twice")
		}
	})
	reads := []struct {
		name string
		read func(r *gatenet.UDPConn, b []byte) (int, error)
	}{
		{"Read", func(r *gatenet.UDPConn, b []byte) (int, error) { return r.Read(b) }},
		{"ReadFromUDP", func(r *gatenet.UDPConn, b []byte) (int, error) { n, _, err := r.ReadFromUDP(b); return n, err }},
		{"ReadMsgUDP", func(r *gatenet.UDPConn, b []byte) (int, error) {
			n, _, _, _, err := r.ReadMsgUDP(b, nil)
			return n, err
		}},
	}
	for _, rc := range reads {
		t.Run(rc.name+"/drop", func(t *testing.T) {
			w, r := pair(t)
			f := faults.New(1, faults.Drop{P: 1, Dir: faults.Read})
			require.NoError(t, gatenet.InjectFaults(r, f))
			for i := range 3 {
				_, err := w.WriteToUDP([]byte{byte(i)}, r.LocalAddr().(*net.UDPAddr))
				require.NoError(t, err)
			}
			got := receive(t, r, func(b []byte) (int, error) { return rc.read(r, b) }, r.SetReadDeadline, 0, 200*time.Millisecond)
			require.Empty(t, got)
			// A drop is decided before the call, so a call that finds
			// nothing (EAGAIN) may count one too.
			require.GreaterOrEqual(t, f.Stats().Dropped, int64(3))
		})
	}
	t.Run("unixgram/reorder", func(t *testing.T) {
		dir := t.TempDir()
		raddr := &net.UnixAddr{Net: "unixgram", Name: filepath.Join(dir, "r")}
		r, err := gatenet.ListenUnixgram("unixgram", raddr)
		require.NoError(t, err)
		defer r.Close()
		w, err := gatenet.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram", Name: filepath.Join(dir, "w")})
		require.NoError(t, err)
		defer w.Close()
		f := faults.New(1, faults.Reorder{P: 1, Delay: 50 * time.Millisecond})
		require.NoError(t, gatenet.InjectFaults(w, f))
		for i := range 3 {
			_, err := w.WriteToUnix([]byte{byte(i)}, raddr)
			require.NoError(t, err)
		}
		got := receive(t, r, func(b []byte) (int, error) { n, _, err := r.ReadFromUnix(b); return n, err }, r.SetReadDeadline, 3, 500*time.Millisecond)
		require.ElementsMatch(t, []byte{0, 1, 2}, got)
		require.EqualValues(t, 3, f.Stats().Reordered)
	})
}
