package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// EnvVar is the environment variable gatenet reads, once, for faults to
// attach to every descriptor it creates (sockets, listeners, pipes). Any
// binary using gatenet reads it, a production one too; an invalid value
// makes every gatenet constructor fail with an error naming it.
const EnvVar = "GATENET_FAULTS"

// Parse reads the GATENET_FAULTS syntax: ';'-separated settings, each
// name[.read|.write]=value, the suffix setting the fault's Dir:
//
//	seed=N                      the seed (default 1)
//	slicer=MIN-MAX[/DELAY]      Slicer            e.g. slicer=1-7, slicer.read=1-3/1ms
//	latency=DELAY[+JITTER]      Latency           e.g. latency=5ms+2ms
//	bandwidth=BYTES             Bandwidth, bytes/s (k and m suffixes: ×1024, ×1024²)
//	stall=N[/FOR]               Stall             e.g. stall.read=4096/100ms
//	reset=N, close=N            ResetAfter, CloseAfter
//	eagain=P, wakeup=P          EAGAIN, Wakeups
//	accept=ERRNO/P[/BURST]      AcceptErrors      e.g. accept=EMFILE/0.1/5
//	dial=ERRNO[/P], dial=hang[/P]  DialErrors
//	drop=P, dup=P, reorder=P[/DELAY]  Drop, Duplicate, Reorder
//
// An empty string is no faults (nil, nil). The result is validated.
func Parse(spec string) (*Faults, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	f := &Faults{Seed: 1}
	for _, item := range strings.Split(spec, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("faults: %q: want name=value", item)
		}
		name, dirName, _ := strings.Cut(name, ".")
		var dir Dir
		switch dirName {
		case "":
		case "read":
			dir = Read
		case "write":
			dir = Write
		default:
			return nil, fmt.Errorf("faults: %q: direction %q is neither read nor write", item, dirName)
		}
		if name == "seed" {
			seed, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("faults: %q: %w", item, err)
			}
			f.Seed = seed
			continue
		}
		x, err := parseFault(name, value, dir)
		if err != nil {
			return nil, fmt.Errorf("faults: %q: %w", item, err)
		}
		f.Faults = append(f.Faults, x)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

func parseFault(name, value string, dir Dir) (Fault, error) {
	args := strings.Split(value, "/")
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	var errs []error
	num := func(s string) int64 {
		n, err := parseSize(s)
		errs = append(errs, err)
		return n
	}
	dur := func(s string) time.Duration {
		if s == "" {
			return 0
		}
		d, err := time.ParseDuration(s)
		errs = append(errs, err)
		return d
	}
	prob := func(s string, def float64) float64 {
		if s == "" {
			return def
		}
		p, err := strconv.ParseFloat(s, 64)
		errs = append(errs, err)
		return p
	}
	errno := func(s string) syscall.Errno {
		e, ok := errnoByName[strings.ToUpper(s)]
		if !ok {
			errs = append(errs, fmt.Errorf("unknown errno %q", s))
		}
		return e
	}
	var x Fault
	switch name {
	case "slicer":
		lo, hi, _ := strings.Cut(arg(0), "-")
		if hi == "" {
			hi = lo
		}
		x = Slicer{Min: int(num(lo)), Max: int(num(hi)), Delay: dur(arg(1)), Dir: dir}
	case "latency":
		d, j, _ := strings.Cut(arg(0), "+")
		x = Latency{Delay: dur(d), Jitter: dur(j), Dir: dir}
	case "bandwidth":
		x = Bandwidth{BytesPerSecond: int(num(arg(0))), Dir: dir}
	case "stall":
		x = Stall{After: num(arg(0)), For: dur(arg(1)), Dir: dir}
	case "reset":
		x = ResetAfter{N: num(arg(0)), Dir: dir}
	case "close":
		x = CloseAfter{N: num(arg(0)), Dir: dir}
	case "eagain":
		x = EAGAIN{P: prob(arg(0), 0), Dir: dir}
	case "wakeup":
		x = Wakeups{P: prob(arg(0), 0), Dir: dir}
	case "accept":
		burst := int64(0)
		if arg(2) != "" {
			burst = num(arg(2))
		}
		x = AcceptErrors{Err: errno(arg(0)), P: prob(arg(1), 0), Burst: int(burst)}
	case "dial":
		var e syscall.Errno
		if !strings.EqualFold(arg(0), "hang") {
			e = errno(arg(0))
		}
		x = DialErrors{Err: e, P: prob(arg(1), 1)}
	case "drop":
		x = Drop{P: prob(arg(0), 0), Dir: dir}
	case "dup":
		x = Duplicate{P: prob(arg(0), 0)}
	case "reorder":
		x = Reorder{P: prob(arg(0), 0), Delay: dur(arg(1))}
	default:
		return nil, errors.New("unknown fault")
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return x, nil
}

// parseSize reads a byte count with an optional k or m suffix (×1024,
// ×1024²).
func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

var errnoByName = map[string]syscall.Errno{
	"EMFILE": syscall.EMFILE, "ENFILE": syscall.ENFILE, "ENOBUFS": syscall.ENOBUFS,
	"ENOMEM": syscall.ENOMEM, "ECONNABORTED": syscall.ECONNABORTED, "EPERM": syscall.EPERM,
	"ECONNREFUSED": syscall.ECONNREFUSED, "ENETUNREACH": syscall.ENETUNREACH,
	"EHOSTUNREACH": syscall.EHOSTUNREACH, "ETIMEDOUT": syscall.ETIMEDOUT,
	"ECONNRESET": syscall.ECONNRESET, "EACCES": syscall.EACCES,
}

func errnoName(e syscall.Errno) string {
	for name, v := range errnoByName {
		if v == e {
			return name
		}
	}
	return strconv.Itoa(int(e))
}

func dirSuffix(d Dir) string {
	switch d {
	case Read:
		return ".read"
	case Write:
		return ".write"
	}
	return ""
}

func fmtDur(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return "/" + d.String()
}

// format is x in Parse's syntax.
func format(x Fault) string {
	switch x := x.(type) {
	case Slicer:
		return fmt.Sprintf("slicer%s=%d-%d%s", dirSuffix(x.Dir), x.Min, x.Max, fmtDur(x.Delay))
	case Latency:
		s := fmt.Sprintf("latency%s=%v", dirSuffix(x.Dir), x.Delay)
		if x.Jitter != 0 {
			s += "+" + x.Jitter.String()
		}
		return s
	case Bandwidth:
		return fmt.Sprintf("bandwidth%s=%d", dirSuffix(x.Dir), x.BytesPerSecond)
	case Stall:
		return fmt.Sprintf("stall%s=%d%s", dirSuffix(x.Dir), x.After, fmtDur(x.For))
	case ResetAfter:
		return fmt.Sprintf("reset%s=%d", dirSuffix(x.Dir), x.N)
	case CloseAfter:
		return fmt.Sprintf("close%s=%d", dirSuffix(x.Dir), x.N)
	case EAGAIN:
		return fmt.Sprintf("eagain%s=%g", dirSuffix(x.Dir), x.P)
	case Wakeups:
		return fmt.Sprintf("wakeup%s=%g", dirSuffix(x.Dir), x.P)
	case AcceptErrors:
		return fmt.Sprintf("accept=%s/%g/%d", errnoName(x.Err), x.P, max(x.Burst, 1))
	case DialErrors:
		name := "hang"
		if x.Err != 0 {
			name = errnoName(x.Err)
		}
		return fmt.Sprintf("dial=%s/%g", name, x.P)
	case Drop:
		return fmt.Sprintf("drop%s=%g", dirSuffix(x.Dir), x.P)
	case Duplicate:
		return fmt.Sprintf("dup=%g", x.P)
	case Reorder:
		return fmt.Sprintf("reorder=%g%s", x.P, fmtDur(x.Delay))
	}
	return fmt.Sprintf("%T", x)
}
