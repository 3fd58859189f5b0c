//go:build linux

package gatenet

import (
	"errors"
	"io"
	"os"
	"os/exec"

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
// A grandchild that inherits the child's end keeps EOF away for as long
// as it lives, whatever the child does: bound such reads with a deadline
// (SetReadDeadline) or a context (ReadContext), as a read of any pipe.

// StdinPipe returns the writing end of a pipe that will be connected to
// cmd's standard input when it starts, as (*exec.Cmd).StdinPipe does, but
// as a *File: Close gives the child EOF. It must be called before Start;
// its errors are os/exec's ("exec: Stdin already set", "exec: StdinPipe
// after process started").
func StdinPipe(cmd *exec.Cmd) (*File, error) { return processPipe(cmd, (*exec.Cmd).StdinPipe, "|1") }

// StdoutPipe returns the reading end of a pipe that will be connected to
// cmd's standard output when it starts, as (*exec.Cmd).StdoutPipe does,
// but as a *File, with no copying goroutine: reads honour deadlines and
// contexts, and Close unblocks them. Unlike os/exec's, Wait does not
// close it: read to io.EOF before or after Wait, then Close it. Its
// errors are os/exec's ("exec: Stdout already set", "exec: StdoutPipe
// after process started").
func StdoutPipe(cmd *exec.Cmd) (*File, error) { return processPipe(cmd, (*exec.Cmd).StdoutPipe, "|0") }

// StderrPipe is StdoutPipe for cmd's standard error, as
// (*exec.Cmd).StderrPipe.
func StderrPipe(cmd *exec.Cmd) (*File, error) { return processPipe(cmd, (*exec.Cmd).StderrPipe, "|0") }

// processPipe is one of them: os/exec's pipe method, then takeOver.
func processPipe[E io.Closer](cmd *exec.Cmd, pipe func(*exec.Cmd) (E, error), name string) (*File, error) {
	if cmd == nil {
		return nil, errNilCmd
	}
	end, err := pipe(cmd)
	if err != nil {
		return nil, err
	}
	return takeOver(end, name)
}

// errNilCmd is the process pipes' error for a nil *exec.Cmd, whose own
// methods would panic.
var errNilCmd = errors.New("gatenet: nil *exec.Cmd")

// takeOver makes a File of a duplicate of end, the parent's end of an
// os/exec pipe, and closes end: os/exec still closes the child's end after
// Start, and its Wait closes only the *os.File it made. The duplicate
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
	f, err := newFile(pollfd.Default(), nfd, name, fileNonblocking)
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
