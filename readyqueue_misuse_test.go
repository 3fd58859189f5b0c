//go:build linux

package gatenet_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestReadyQueueMisuse: bad input to a queue gets net's errors, never a
// panic, and binds nothing.
func TestReadyQueueMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	_, s := testutil.TCPPair(t)

	var nilQueue *gatenet.ReadyQueue
	for name, q := range map[string]*gatenet.ReadyQueue{"nil": nilQueue, "zero": {}} {
		err := q.Add(s)
		var op *net.OpError
		require.ErrorAs(t, err, &op, name)
		require.Contains(t, err.Error(), "NewReadyQueue", name)
		_, err = q.Next(context.Background())
		require.ErrorAs(t, err, &op, name)
		_, err = q.Write(s, []byte("x"))
		require.ErrorAs(t, err, &op, name)
		require.Error(t, q.SetOutputLimit(1), name)
		require.Error(t, q.Close(), name)
		require.Zero(t, q.Len(), name)
		require.Zero(t, q.Buffered(s), name)
		q.Remove(s)
	}

	q := gatenet.NewReadyQueue()
	defer q.Close()
	var op *net.OpError
	err := q.Add(nil)
	require.ErrorAs(t, err, &op)
	require.ErrorIs(t, err, syscall.EINVAL)
	require.ErrorIs(t, q.Add((*gatenet.TCPConn)(nil)), syscall.EINVAL)
	_, err = q.Write(nil, []byte("x"))
	require.ErrorIs(t, err, syscall.EINVAL)
	require.Error(t, q.SetOutputLimit(-1))

	// Write to a value the queue does not watch, or that is not a stream.
	_, err = q.Write(s, []byte("x"))
	require.ErrorAs(t, err, &op)
	require.Contains(t, err.Error(), "Add it first")
	ln, err := gatenet.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	require.NoError(t, q.Add(ln.(gatenet.Pollable)))
	_, err = q.Write(ln.(gatenet.Pollable), []byte("x"))
	require.ErrorAs(t, err, &op)
	require.Contains(t, err.Error(), "byte stream")

	// A regular file, which Add can never take: Write says so, not "Add
	// it first".
	f, err := gatenet.OpenFile(filepath.Join(t.TempDir(), "regular"), os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	defer f.Close()
	addErr := q.Add(f)
	require.ErrorAs(t, addErr, &op)
	_, err = q.Write(f, []byte("x"))
	require.ErrorAs(t, err, &op)
	require.Equal(t, "write", op.Op)
	require.NotContains(t, err.Error(), "Add it first")
	require.Equal(t, errors.Unwrap(addErr).Error(), errors.Unwrap(err).Error(), "Write's reason is Add's")

	// A closed conn or File: the closed error of its kind.
	_, cs := testutil.TCPPair(t)
	require.NoError(t, cs.Close())
	require.ErrorIs(t, q.Add(cs), net.ErrClosed)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, r.Close())
	err = q.Add(r)
	require.ErrorAs(t, err, &op)
	require.ErrorIs(t, err, os.ErrClosed)

	// Watched by another open queue: an error naming the public types.
	require.NoError(t, q.Add(s))
	other := gatenet.NewReadyQueue()
	defer other.Close()
	err = other.Add(s)
	require.ErrorAs(t, err, &op)
	require.Contains(t, err.Error(), "another ReadyQueue")
	require.Equal(t, "add", op.Op)
	require.Equal(t, s.LocalAddr(), op.Source)

	// A closed queue: Add fails with net.ErrClosed and binds nothing, and
	// its members may join another queue.
	require.NoError(t, q.Close())
	err = q.Add(s)
	require.ErrorIs(t, err, net.ErrClosed)
	require.ErrorAs(t, err, &op)
	require.NoError(t, other.Add(s), "a member of a closed queue moves")
	_, err = q.Next(context.Background())
	require.ErrorIs(t, err, net.ErrClosed)
	fresh := gatenet.NewReadyQueue()
	require.NoError(t, fresh.Close())
	_, s2 := testutil.TCPPair(t)
	require.ErrorIs(t, fresh.Add(s2), net.ErrClosed)
	third := gatenet.NewReadyQueue()
	defer third.Close()
	require.NoError(t, third.Add(s2), "Add on the closed queue bound nothing")
}
