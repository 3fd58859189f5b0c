//go:build linux

package main

// The child-output workload: a child process (this binary, re-executed
// as a writer) streams to its stdout, and the round reads it to EOF
// through os/exec's StdoutPipe (os) or gatenet.StdoutPipe (gatenet): what
// a supervisor tailing a worker pays. MB/s from Start to EOF, and the
// reading process's CPU per MB (the writer's is the same for both).

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/benchharness"
)

// writerEnv makes this binary the child-output writer: "SIZE,DURATION",
// SIZE-byte writes for DURATION.
const writerEnv = "PIPEBENCH_WRITER"

// runWriter is the writer's whole life; it returns the exit code.
func runWriter(spec string) int {
	sizeStr, durStr, _ := strings.Cut(spec, ",")
	size, err1 := strconv.Atoi(sizeStr)
	d, err2 := time.ParseDuration(durStr)
	if err1 != nil || err2 != nil || size < 1 {
		return 2
	}
	chunk := make([]byte, size)
	for end := time.Now().Add(d); time.Now().Before(end); {
		if _, err := os.Stdout.Write(chunk); err != nil {
			return 1
		}
	}
	return 0
}

func childOutput(kind string, size int, duration time.Duration) (result, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), writerEnv+"="+strconv.Itoa(size)+","+duration.String())
	var out io.ReadCloser
	var err error
	if kind == "os" {
		out, err = cmd.StdoutPipe()
	} else {
		out, err = gatenet.StdoutPipe(cmd)
	}
	if err != nil {
		return result{}, err
	}
	meter := benchharness.StartMeter()
	if err := cmd.Start(); err != nil {
		out.Close()
		return result{}, err
	}
	buf := make([]byte, size)
	var total int64
	var readErr error
	for {
		n, err := out.Read(buf)
		total += int64(n)
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	waitErr := cmd.Wait()
	elapsed, cpu := meter.Stop()
	closeErr := out.Close()
	if kind == "os" {
		closeErr = nil // Wait closed it
	}
	if err := errors.Join(readErr, waitErr, closeErr); err != nil {
		return result{}, err
	}
	if total == 0 {
		return result{}, fmt.Errorf("the writer sent nothing")
	}
	return result{Ops: total / int64(size), Bytes: total, Seconds: elapsed.Seconds(), CPUNanos: cpu}, nil
}
