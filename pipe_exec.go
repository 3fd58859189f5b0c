//go:build linux

package gatenet

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync/atomic"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/internal/bubble"
	"github.com/gatenet/gatenet/pollfd"
)

// Pipes for child processes: os/exec's StdinPipe, StdoutPipe and
// StderrPipe with the parent's end a gatenet File, so a read of a child's
// output has deadlines, ReadContext, WaitRead, a ReadyQueue, and a Close
// that unblocks it. os/exec makes the pipe, gives the child its end and
// closes the parent's copy of that end once the child has started (so EOF
// comes when the child, and whoever inherited the pipe from it, closes
// its end), and reports misuse with its own errors. The pipe gets
// gatenet's default buffer, as Pipe's (PipeConfig). gatenet then takes
// the parent's end over: a duplicate of it becomes the File, and
// os/exec's *os.File is closed, so that Wait, which closes os/exec's end,
// leaves the File open: a read after Wait returns what is left, then
// io.EOF, and the caller closes the File.
//
// A Start that fails closes the File before it returns, as os/exec closes
// its parent's end (watchStart says how).
//
// A grandchild that inherits the child's end keeps EOF away for as long
// as it lives, whatever the child does: bound such reads with a deadline
// (SetReadDeadline) or a context (ReadContext), as a read of any pipe.

// StdinPipe returns the writing end of a pipe that will be connected to
// cmd's standard input when it starts, as (*exec.Cmd).StdinPipe does, but
// as a *File: Close gives the child EOF. It must be called before Start;
// its errors are os/exec's ("exec: Stdin already set", "exec: StdinPipe
// after process started"). The File is named "|stdin" (os/exec's is "|1").
func StdinPipe(cmd *exec.Cmd) (*File, error) {
	return processPipe(cmd, (*exec.Cmd).StdinPipe, func(c *exec.Cmd) *io.Reader { return &c.Stdin }, "|stdin")
}

// StdoutPipe returns the reading end of a pipe that will be connected to
// cmd's standard output when it starts, as (*exec.Cmd).StdoutPipe does,
// but as a *File, with no copying goroutine: reads honour deadlines and
// contexts, and Close unblocks them. Unlike os/exec's, Wait does not
// close it: read to io.EOF before or after Wait, then Close it. Its
// errors are os/exec's ("exec: Stdout already set", "exec: StdoutPipe
// after process started"). The File is named "|stdout" (os/exec's is
// "|0", as its stderr's).
func StdoutPipe(cmd *exec.Cmd) (*File, error) {
	return processPipe(cmd, (*exec.Cmd).StdoutPipe, func(c *exec.Cmd) *io.Writer { return &c.Stdout }, "|stdout")
}

// StderrPipe is StdoutPipe for cmd's standard error, as
// (*exec.Cmd).StderrPipe; the File is named "|stderr".
func StderrPipe(cmd *exec.Cmd) (*File, error) {
	return processPipe(cmd, (*exec.Cmd).StderrPipe, func(c *exec.Cmd) *io.Writer { return &c.Stderr }, "|stderr")
}

// processPipe is one of them: os/exec's pipe method, which sets the
// stream's field (stream) to the child's end; takeOver; then watchStart.
func processPipe[E io.Closer, S any](cmd *exec.Cmd, pipe func(*exec.Cmd) (E, error), stream func(*exec.Cmd) *S, name string) (*File, error) {
	if cmd == nil {
		return nil, errNilCmd
	}
	end, err := pipe(cmd)
	if err != nil {
		return nil, err
	}
	f, err := takeOver(end, name)
	if err != nil {
		return nil, err
	}
	if err := watchStart(cmd, stream(cmd), f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// errNilCmd is the process pipes' error for a nil *exec.Cmd, whose own
// methods would panic.
var errNilCmd = errors.New("gatenet: nil *exec.Cmd")

// takeOver makes a File of a duplicate of end, the parent's end of an
// os/exec pipe, and closes end: the child's end is still closed after
// Start (watchStart), and os/exec's Wait closes only the *os.File it made. The duplicate
// shares end's open file description, so it is non-blocking as os.Pipe
// left it.
func takeOver(end io.Closer, name string) (*File, error) {
	defer end.Close()
	osf, ok := end.(*os.File)
	if !ok {
		return nil, errors.New("gatenet: os/exec's pipe end is not an *os.File")
	}
	nfd, err := dupOf(osf)
	if err != nil {
		return nil, err
	}
	setPipeSize(nfd, defaultPipeSize) // as Pipe's (pipe.go); os/exec's is the kernel's 64 KiB
	f, err := newFile(pollfd.Default(), nfd, name, fileNonblocking, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// watchStart closes f when cmd's Start fails, before Start returns, as
// os/exec closes its own parent's end. os/exec keeps its ends in lists in
// cmd that nothing outside reaches; what can be watched is the child's
// end, exe, which Start closes as it ends, started or not. A goroutine
// waits on exe, which that Close wakes, inside RawConn.Control, whose
// reference makes the Close, and so Start, wait for the goroutine. Then
// cmd.Process tells: nil, Start failed, and the goroutine closes f. Start
// sets Process before it closes exe, and the wait returns once the Close
// has marked exe's reference count (an atomic), so the read of Process is
// ordered after the write.
//
// Close waits for references only while an *os.File is non-blocking, and
// os.StartProcess makes the ends it passes blocking (Fd): so exe is never
// passed, the child gets a blocking duplicate of it (*stream), and the
// goroutine closes that as Start ends, as os/exec closes exe.
//
// The goroutine lives until Start ends; for a cmd never started, until a
// cleanup wakes it (a deadline on exe) once cmd is collected. In a
// synctest bubble it runs outside the bubble (bubble.GoOutside): its wait
// on the kernel is never durable, and the bubble's clock would stand
// still while it lasts.
func watchStart[S any](cmd *exec.Cmd, stream *S, f *File) error {
	exe, ok := any(*stream).(*os.File)
	if !ok {
		return errors.New("gatenet: os/exec's pipe end is not an *os.File")
	}
	rc, err := exe.SyscallConn()
	if err != nil {
		return err
	}
	nfd, err := dupOf(exe)
	if err != nil {
		return err
	}
	if err := unix.SetNonblock(nfd, false); err != nil {
		unix.Close(nfd)
		return os.NewSyscallError("fcntl", err)
	}
	child := os.NewFile(uintptr(nfd), exe.Name())
	*stream = any(child).(S)

	// Only exe's Close, or the deadline, ends the wait (never); waiting in
	// the direction exe never becomes ready for (the child's end of stdin,
	// a reader, for writing; of stdout or stderr for reading) spares the
	// goroutine wake-ups meanwhile.
	wait := rc.Read
	if _, childReads := any(stream).(*io.Reader); childReads {
		wait = rc.Write
	}
	never := func(uintptr) bool { return false }
	cleanup := runtime.AddCleanup(cmd, func(exe *os.File) { exe.SetDeadline(aLongTimeAgo) }, exe)
	weakCmd := weak.Make(cmd)
	var holding atomic.Bool
	watch := func() {
		defer cleanup.Stop()
		rc.Control(func(uintptr) {
			holding.Store(true)
			wait(never) // returns when Start has closed exe, or cmd is gone
			child.Close()
			if cmd := weakCmd.Value(); cmd != nil && cmd.Process == nil {
				f.Close()
			}
		})
		if !holding.Load() { // exe closed already: Start cannot be waited for
			child.Close()
			holding.Store(true)
		}
	}
	if bubble.In() {
		// A goroutine of the bubble waiting on exe, which only the
		// kernel wakes, would stop the bubble's clock until Start, and
		// keep the bubble from ending if Start never comes.
		bubble.GoOutside(watch)
	} else {
		go watch()
	}
	for !holding.Load() { // a channel of the bubble is not for a goroutine outside
		runtime.Gosched()
	}
	return nil
}
