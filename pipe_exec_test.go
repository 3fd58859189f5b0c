//go:build linux

package gatenet_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// childModeEnv makes the test binary a child program (TestMain runs
// runChildMode instead of the tests), so that the process-pipe tests need
// nothing installed.
const childModeEnv = "GATENET_TEST_CHILD"

// runChildMode is a child's whole life, by mode; it returns the exit code.
func runChildMode(mode string) int {
	switch {
	case mode == "silent": // says nothing until killed
		time.Sleep(time.Minute)
	case mode == "echo": // stdin to stdout until EOF
		io.Copy(os.Stdout, os.Stdin)
	case mode == "nonblock": // whether each of 0, 1 and 2 has O_NONBLOCK
		for fd := range 3 {
			fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if err != nil {
				return 1
			}
			os.Stdout.WriteString(strconv.FormatBool(fl&unix.O_NONBLOCK != 0) + " ")
		}
	case strings.HasPrefix(mode, "write:"): // N bytes of the test stream
		n, _ := strconv.Atoi(strings.TrimPrefix(mode, "write:"))
		io.CopyN(os.Stdout, testStream(), int64(n))
		os.Stderr.WriteString("done\n")
	case mode == "grandchild": // leaves a silent grandchild holding stdout
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), childModeEnv+"=silent")
		gc.Stdout = os.Stdout
		if err := gc.Start(); err != nil {
			return 1
		}
		os.Stdout.WriteString(strconv.Itoa(gc.Process.Pid) + "\n")
	case strings.HasPrefix(mode, "blocking-read:"): // fd_private_test.go
		return blockingReadChild(strings.TrimPrefix(mode, "blocking-read:"))
	default:
		return 2
	}
	return 0
}

// testStream is the bytes "write:N" children send: deterministic, not
// periodic over a pipe buffer.
func testStream() io.Reader {
	return io.LimitReader(&counterReader{}, 1<<40)
}

type counterReader struct{ i uint32 }

func (r *counterReader) Read(p []byte) (int, error) {
	for k := range p {
		r.i = r.i*1664525 + 1013904223
		p[k] = byte(r.i >> 24)
	}
	return len(p), nil
}

// child is a command re-executing this test binary in mode.
func child(mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childModeEnv+"="+mode)
	return cmd
}

// startChild starts a test: leak checks, a watchdog, and a child in mode
// with its stdout (and its stdin, if stdin) on gatenet pipes, killed and
// waited for, and its pipes closed, when the test ends.
func startChild(t *testing.T, mode string, stdin bool) (cmd *exec.Cmd, in, out *gatenet.File) {
	t.Helper()
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	cmd = child(mode)
	var err error
	if stdin {
		in, err = gatenet.StdinPipe(cmd)
		require.NoError(t, err)
	}
	out, err = gatenet.StdoutPipe(cmd)
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		out.Close()
		if in != nil {
			in.Close()
		}
	})
	return cmd, in, out
}

// childPipes is a child in mode, not yet started, with its stdout and
// stderr (and its stdin, if stdin) on gatenet pipes, closed when the test
// ends; the test gets leak checks and a watchdog, as with startChild.
func childPipes(t *testing.T, mode string, stdin bool) (cmd *exec.Cmd, in, out, errs *gatenet.File) {
	t.Helper()
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	cmd = child(mode)
	pipe := func(f func(*exec.Cmd) (*gatenet.File, error)) *gatenet.File {
		p, err := f(cmd)
		require.NoError(t, err)
		t.Cleanup(func() { p.Close() })
		return p
	}
	if stdin {
		in = pipe(gatenet.StdinPipe)
	}
	return cmd, in, pipe(gatenet.StdoutPipe), pipe(gatenet.StderrPipe)
}

// TestProcessPipesSize: a process pipe has Pipe's default buffer.
func TestProcessPipesSize(t *testing.T) {
	_, _, out := startChild(t, "silent", false)
	r, w, err := gatenet.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	require.Equal(t, pipeBufSize(t, r), pipeBufSize(t, out))
	require.Greater(t, pipeBufSize(t, out), kernelPipeSize(t), "more than the kernel's default")
}

func TestStdoutPipeDeadline(t *testing.T) {
	_, _, out := startChild(t, "silent", false)
	require.NoError(t, out.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err := out.Read(make([]byte, 8))
	requirePathError(t, err, "read", "|stdout", os.ErrDeadlineExceeded)
}

// TestProcessPipesNames: each pipe is named after its stream, in Name and
// in its errors, where os/exec's stdout and stderr are both "|0".
func TestProcessPipesNames(t *testing.T) {
	cmd, in, out, errs := childPipes(t, "write:0", true) // exits at once, reading nothing
	require.Equal(t, []string{"|stdin", "|stdout", "|stderr"}, []string{in.Name(), out.Name(), errs.Name()})
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Wait())

	_, err := in.Write([]byte("x"))
	requirePathError(t, err, "write", "|stdin", syscall.EPIPE)
	_, err = io.ReadAll(errs)
	require.NoError(t, err)
	require.NoError(t, errs.Close())
	_, err = errs.Read(make([]byte, 8))
	requirePathError(t, err, "read", "|stderr", os.ErrClosed)
	require.EqualError(t, err, "read |stderr: file already closed")
}

// TestProcessPipesBlockingInChild: the child's ends are in blocking mode,
// as os/exec leaves them (a child's stdio is rarely ready for EAGAIN).
func TestProcessPipesBlockingInChild(t *testing.T) {
	cmd, _, out, _ := childPipes(t, "nonblock", true)
	require.NoError(t, cmd.Start())
	got, err := io.ReadAll(out)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	require.Equal(t, "false false false ", string(got))
}

// TestProcessPipesClosedBeforeStart: the parent's ends may be closed
// before Start, as os/exec's: the child still starts (on pipes with no
// other end), and nothing is left open after Wait.
func TestProcessPipesClosedBeforeStart(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	before := testutil.OpenFDs(t)
	cmd := child("echo")
	in, err := gatenet.StdinPipe(cmd)
	require.NoError(t, err)
	out, err := gatenet.StdoutPipe(cmd)
	require.NoError(t, err)
	require.NoError(t, in.Close())
	require.NoError(t, out.Close())
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Wait(), "the child read EOF at once and wrote nothing")
	require.Equal(t, before, testutil.OpenFDs(t), "no descriptor left, with no collection")
}

// TestProcessPipesNeverStarted: the pipes of a command that is never
// started go with it when it is collected, as os/exec's (CheckLeaks
// collects), the goroutine that waits for its Start included.
func TestProcessPipesNeverStarted(t *testing.T) {
	testutil.CheckLeaks(t)
	func() {
		cmd := child("silent")
		out, err := gatenet.StdoutPipe(cmd)
		require.NoError(t, err)
		require.NoError(t, out.Close())
		_, err = gatenet.StdinPipe(cmd) // left open: the File's finalizer closes it
		require.NoError(t, err)
	}()
}

// TestProcessPipesFailedStart: a Start that fails closes the parent's end
// of each pipe before it returns, as os/exec's (the "os/exec" subtests):
// 20 failed starts leave as many descriptors open as before them, with no
// garbage collection, whether the command is not found (LookPath fails
// before any process is made) or is found but cannot run (fork/exec
// fails), and our ends then read and write as closed.
func TestProcessPipesFailedStart(t *testing.T) {
	testutil.CheckLeaks(t)
	notExec := filepath.Join(t.TempDir(), "not-executable")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	type ends struct {
		in        io.Writer
		out, errs io.Reader
	}
	ours := func(cmd *exec.Cmd) (e ends, err error) {
		if e.in, err = gatenet.StdinPipe(cmd); err != nil {
			return e, err
		}
		if e.out, err = gatenet.StdoutPipe(cmd); err != nil {
			return e, err
		}
		e.errs, err = gatenet.StderrPipe(cmd)
		return e, err
	}
	std := func(cmd *exec.Cmd) (e ends, err error) {
		if e.in, err = cmd.StdinPipe(); err != nil {
			return e, err
		}
		if e.out, err = cmd.StdoutPipe(); err != nil {
			return e, err
		}
		e.errs, err = cmd.StderrPipe()
		return e, err
	}
	failedStarts := func(t *testing.T, path string, pipes func(*exec.Cmd) (ends, error)) ends {
		before := testutil.OpenFDs(t)
		var last ends
		for range 20 {
			cmd := exec.Command(path)
			var err error
			last, err = pipes(cmd)
			require.NoError(t, err)
			require.Error(t, cmd.Start())
		}
		require.Equal(t, before, testutil.OpenFDs(t), "descriptors open before and after 20 failed starts")
		return last
	}
	for _, c := range []struct{ name, path string }{
		{"not found", "gatenet-no-such-command"}, // LookPath's error
		{"no such file", "/nonexistent/gatenet"}, // fork/exec's ENOENT
		{"not executable", notExec},              // fork/exec's EACCES
	} {
		path := c.path
		t.Run(c.name, func(t *testing.T) {
			t.Run("os/exec", func(t *testing.T) { failedStarts(t, path, std) })
			last := failedStarts(t, path, ours)
			_, err := last.out.Read(make([]byte, 8))
			requirePathError(t, err, "read", "|stdout", os.ErrClosed)
			_, err = last.errs.Read(make([]byte, 8))
			requirePathError(t, err, "read", "|stderr", os.ErrClosed)
			_, err = last.in.Write([]byte("x"))
			requirePathError(t, err, "write", "|stdin", os.ErrClosed)
		})
	}
}

func TestStdoutPipeCloseUnblocks(t *testing.T) {
	_, _, out := startChild(t, "silent", false)
	done := make(chan error, 1)
	go func() {
		_, err := out.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it park (either way, Close must end it)
	require.NoError(t, out.Close())
	require.ErrorIs(t, <-done, os.ErrClosed)
}

func TestStdoutPipeReadContext(t *testing.T) {
	_, _, out := startChild(t, "silent", false)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := out.ReadContext(ctx, make([]byte, 8))
	require.ErrorIs(t, err, context.Canceled)
}

// TestStdoutPipeKilledChild: a killed child's pipe reads EOF.
func TestStdoutPipeKilledChild(t *testing.T) {
	cmd, _, out := startChild(t, "silent", false)
	require.NoError(t, cmd.Process.Kill())
	n, err := out.Read(make([]byte, 8))
	require.Equal(t, 0, n)
	require.Equal(t, io.EOF, err)
}

// TestStdoutPipeAfterWait: unlike os/exec's, the pipe outlives Wait: what
// the child wrote is read after it, byte for byte, then io.EOF.
func TestStdoutPipeAfterWait(t *testing.T) {
	const n = 32 << 10 // fits the pipe: the child need not wait for a reader
	cmd, _, out, errs := childPipes(t, "write:"+strconv.Itoa(n), false)
	require.NoError(t, cmd.Start())
	require.NoError(t, cmd.Wait())
	got, err := io.ReadAll(out)
	require.NoError(t, err)
	want, _ := io.ReadAll(io.LimitReader(testStream(), n))
	require.Equal(t, sha256.Sum256(want), sha256.Sum256(got))
	msg, err := io.ReadAll(errs)
	require.NoError(t, err)
	require.Equal(t, "done\n", string(msg))
}

// TestStdinPipe: what the parent writes reaches the child, and the
// parent's Close is the child's EOF.
func TestStdinPipe(t *testing.T) {
	cmd, in, out := startChild(t, "echo", true)
	_, err := in.Write([]byte("ping\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ping\n", line)
	require.NoError(t, in.Close())
	require.NoError(t, cmd.Wait(), "the child saw EOF on stdin and exited")
}

// TestStdoutPipeGrandchild: a grandchild that inherited stdout keeps EOF
// away after the child exits; a deadline bounds the wait, and the
// grandchild's end is EOF.
func TestStdoutPipeGrandchild(t *testing.T) {
	cmd, _, out := startChild(t, "grandchild", false)
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	gc, err := os.FindProcess(pid)
	require.NoError(t, err)
	defer gc.Kill()
	require.NoError(t, cmd.Wait(), "the child exits; its grandchild does not")

	require.NoError(t, out.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = out.Read(make([]byte, 8))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "no EOF while the grandchild holds the pipe")

	require.NoError(t, gc.Kill())
	require.NoError(t, out.SetReadDeadline(time.Time{}))
	_, err = out.Read(make([]byte, 8))
	require.Equal(t, io.EOF, err)
	// The grandchild is not ours to wait for; init reaps it.
}

// TestStdoutPipeNoDescriptorLeaks: the child sees only 0, 1, 2 (and the
// one its own listing opens), and the parent keeps nothing after Close.
func TestStdoutPipeNoDescriptorLeaks(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 2*time.Minute)
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", "ls /proc/self/fd")
	out, err := gatenet.StdoutPipe(cmd)
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	listing, err := io.ReadAll(out)
	require.NoError(t, err)
	require.NoError(t, cmd.Wait())
	require.NoError(t, out.Close())
	// Besides 0, 1 and 2 the child may hold only what this process itself
	// inherited without close-on-exec (a test harness's descriptors), and
	// the one its own listing opens.
	inherited := testutil.InheritedFDs(t)
	var extra []string
	for _, fd := range strings.Fields(string(listing)) {
		if !inherited[fd] {
			extra = append(extra, fd)
		}
	}
	require.Len(t, extra, 1, "the child's descriptors: %q; only its listing's may be new", strings.Fields(string(listing)))
}

func TestProcessPipesMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	// The same errors as os/exec's, for each.
	type pipeFunc struct {
		name string
		ours func(*exec.Cmd) (*gatenet.File, error)
		std  func(*exec.Cmd) error
	}
	for _, p := range []pipeFunc{
		{"StdinPipe", gatenet.StdinPipe, func(c *exec.Cmd) error { _, err := c.StdinPipe(); return err }},
		{"StdoutPipe", gatenet.StdoutPipe, func(c *exec.Cmd) error { _, err := c.StdoutPipe(); return err }},
		{"StderrPipe", gatenet.StderrPipe, func(c *exec.Cmd) error { _, err := c.StderrPipe(); return err }},
	} {
		t.Run(p.name, func(t *testing.T) {
			// Twice: the stream is already set.
			ours, std := child("silent"), child("silent")
			f, err := p.ours(ours)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, p.std(std))
			_, err = p.ours(ours)
			require.Error(t, err)
			require.Equal(t, p.std(std).Error(), err.Error())

			// After Start.
			started := exec.Command("true")
			require.NoError(t, started.Start())
			_, err = p.ours(started)
			require.Error(t, err)
			require.Equal(t, p.std(started).Error(), err.Error())
			require.NoError(t, started.Wait())

			_, err = p.ours(nil)
			require.Error(t, err)
		})
	}
}

// TestProcessPipesReadyQueue: 100 children's stdout on one ReadyQueue,
// read by one goroutine that never parks on a stream: every byte arrives,
// in order, for each child (SHA-256).
func TestProcessPipesReadyQueue(t *testing.T) {
	testutil.CheckLeaks(t)
	testutil.Watchdog(t, 3*time.Minute)
	const children, size = 100, 64 << 10
	want := sha256.New()
	io.CopyN(want, testStream(), size)
	q := gatenet.NewReadyQueue()
	defer q.Close()
	type stream struct {
		cmd *exec.Cmd
		f   *gatenet.File
		h   hash.Hash
		n   int
	}
	streams := map[*gatenet.File]*stream{}
	for range children {
		cmd := child("write:" + strconv.Itoa(size))
		f, err := gatenet.StdoutPipe(cmd)
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		s := &stream{cmd: cmd, f: f, h: sha256.New()}
		streams[f] = s
		require.NoError(t, q.Add(f))
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	buf := make([]byte, 16<<10)
	for open := children; open > 0; {
		ctx, stop := context.WithTimeout(context.Background(), time.Minute)
		p, err := q.Next(ctx)
		stop()
		require.NoError(t, err)
		s := streams[p.(*gatenet.File)]
		n, err := s.f.ReadContext(done, buf)
		s.h.Write(buf[:n])
		s.n += n
		switch {
		case err == nil || errors.Is(err, context.Canceled):
			require.NoError(t, q.Add(s.f))
		case err == io.EOF:
			require.NoError(t, s.f.Close())
			require.NoError(t, s.cmd.Wait())
			open--
		default:
			t.Fatal(err)
		}
	}
	for _, s := range streams {
		require.Equal(t, size, s.n)
		require.Equal(t, want.Sum(nil), s.h.Sum(nil))
	}
}
