//go:build linux

package benchharness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/gatenet/gatenet"
)

// PipeEnd is one end of an os.Pipe or a gatenet.Pipe.
type PipeEnd interface {
	io.Reader
	io.Writer
	io.Closer
}

// PipeSizeEnv names the environment variable that sets gatenet's pipe
// buffer in NewPipe: PipeConfig.Size in bytes (0 or unset: gatenet's
// default; negative: the kernel's). Children inherit it from the parent,
// where cmd/pipebench's -pipesize sets it.
const PipeSizeEnv = "GATENET_BENCH_PIPESIZE"

// PipeSize returns the PipeConfig.Size PipeSizeEnv asks for.
func PipeSize() (int, error) {
	s := os.Getenv(PipeSizeEnv)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s=%q: %v", PipeSizeEnv, s, err)
	}
	return n, nil
}

// NewPipe opens a pipe of kind: baseline (the standard library's name in
// the calling command: "os" or "net") for os.Pipe, "gatenet" for
// gatenet.PipeConfig{Size: PipeSize()}.Pipe().
func NewPipe(kind, baseline string) (r, w PipeEnd, err error) {
	switch kind {
	case baseline:
		return os.Pipe()
	case "gatenet":
		size, err := PipeSize()
		if err != nil {
			return nil, nil, err
		}
		return gatenet.PipeConfig{Size: size}.Pipe()
	}
	return nil, nil, fmt.Errorf("unknown -kind %q", kind)
}

// CloseAll closes ends, ignoring ends already closed.
func CloseAll(ends ...PipeEnd) error {
	var errs []error
	for _, e := range ends {
		if err := e.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// PipePingPong: the child writes a size-byte message on pipe A, an echo
// goroutine reads it and writes it back on pipe B, the child reads it
// back; one operation per round trip.
func PipePingPong(kind, baseline string, size int, duration time.Duration) (Result, error) {
	aR, aW, err := NewPipe(kind, baseline)
	if err != nil {
		return Result{}, err
	}
	bR, bW, err := NewPipe(kind, baseline)
	if err != nil {
		CloseAll(aR, aW)
		return Result{}, err
	}
	echoDone := Echo(aR, bW, size)
	n, meter, loopErr := PingPong(aW, bR, size, duration, nil)
	elapsed, cpu := meter.Stop()
	aW.Close() // the echo reads EOF and ends
	echoErr := <-echoDone
	closeErr := CloseAll(aR, aW, bR, bW)
	if err := errors.Join(loopErr, echoErr, closeErr); err != nil {
		return Result{}, err
	}
	return Result{Ops: n, Bytes: n * int64(size), Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}
