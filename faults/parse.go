package faults

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
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
// name[.read|.write|.both]=value, the suffix setting the fault's Dir where
// it has one:
//
//	seed=N                      the seed (default 1)
//	slicer=MIN[-MAX][/DELAY]    Slicer            e.g. slicer=1-7, slicer.read=1-3/1ms
//	latency=DELAY[+JITTER]      Latency           e.g. latency=5ms+2ms
//	bandwidth=BYTES             Bandwidth, bytes/s (k and m suffixes: ×1024, ×1024²)
//	stall=N[/FOR]               Stall             e.g. stall.read=4096/100ms
//	reset=N, close=N            ResetAfter, CloseAfter
//	eagain=P, wakeup=P          EAGAIN, Wakeups
//	drop=P                      Drop
//	accept=ERRNO/P[/BURST]      AcceptErrors      e.g. accept=EMFILE/0.1/5 (no direction)
//	dial=ERRNO[/P], dial=hang[/P]  DialErrors     (no direction)
//	dup=P, reorder=P[/DELAY]    Duplicate, Reorder (no direction)
//
// Sizes (MIN, MAX, BYTES, N, BURST) are integers with an optional k or m
// suffix, durations are time.ParseDuration's, probabilities are in
// [0, 1], an ERRNO is one of the names below or its number. The parse is
// strict: a missing piece, an extra '/' field, a direction on a fault that
// has none, a number that overflows, or a zero that the fault would read
// as its default (dial's P, reorder's DELAY, accept's BURST, stall's FOR)
// is an error naming the setting, the piece and why,
// never a fault that quietly does something else. A string that is empty
// or all white space (as strings.TrimSpace sees it) is no faults (nil,
// nil); settings are trimmed the same way, and empty ones (";;") are
// skipped. The result is validated, and its String reads back to the
// same faults.
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
		x, seed, err := parseItem(item)
		if err != nil {
			return nil, fmt.Errorf("faults: %q: %w", item, err)
		}
		if x == nil {
			f.Seed = seed
			continue
		}
		f.Faults = append(f.Faults, x)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// A form is one setting's syntax: its '/'-separated fields, of which the
// first required are, and whether it takes a direction.
type form struct {
	fields   []string // each field's name, as errors say it
	required int
	dir      bool
}

var forms = map[string]form{
	"seed":      {[]string{"N"}, 1, false},
	"slicer":    {[]string{"MIN[-MAX]", "DELAY"}, 1, true},
	"latency":   {[]string{"DELAY[+JITTER]"}, 1, true},
	"bandwidth": {[]string{"BYTES"}, 1, true},
	"stall":     {[]string{"N", "FOR"}, 1, true},
	"reset":     {[]string{"N"}, 1, true},
	"close":     {[]string{"N"}, 1, true},
	"eagain":    {[]string{"P"}, 1, true},
	"wakeup":    {[]string{"P"}, 1, true},
	"drop":      {[]string{"P"}, 1, true},
	"accept":    {[]string{"ERRNO", "P", "BURST"}, 2, false},
	"dial":      {[]string{"ERRNO|hang", "P"}, 1, false},
	"dup":       {[]string{"P"}, 1, false},
	"reorder":   {[]string{"P", "DELAY"}, 1, false},
}

// syntax is name's form as errors quote it, e.g. "stall[.read|.write|.both]=N[/FOR]".
func (f form) syntax(name string) string {
	s := name
	if f.dir {
		s += "[.read|.write|.both]"
	}
	s += "=" + f.fields[0]
	for i, field := range f.fields[1:] {
		if i+1 < f.required {
			s += "/" + field
		} else {
			s += "[/" + field
		}
	}
	return s + strings.Repeat("]", len(f.fields)-f.required)
}

// pieceName is a field's first piece: "DELAY" of "DELAY[+JITTER]".
func pieceName(field string) string {
	name, _, _ := strings.Cut(field, "[")
	return name
}

// parseItem reads one name[.dir]=value setting: a fault, or (x nil) the
// seed.
func parseItem(item string) (x Fault, seed uint64, err error) {
	key, value, ok := strings.Cut(item, "=")
	if !ok {
		return nil, 0, errors.New("want name=value")
	}
	name, dirName, hasDir := strings.Cut(key, ".")
	fm, ok := forms[name]
	if !ok {
		return nil, 0, fmt.Errorf("unknown fault %q (want one of %s)", name, formNames())
	}
	p := &parser{syntax: fm.syntax(name)}
	var dir Dir
	if hasDir {
		switch {
		case !fm.dir:
			return nil, 0, p.errorf("%s takes no direction, so %q means nothing", name, "."+dirName)
		case dirName == "read":
			dir = Read
		case dirName == "write":
			dir = Write
		case dirName == "both":
			dir = Both
		case dirName == "":
			return nil, 0, p.errorf("empty direction after %q, neither read, write nor both", name+".")
		default:
			return nil, 0, p.errorf("direction %q is neither read, write nor both", dirName)
		}
	}
	args := strings.Split(value, "/")
	if n := len(fm.fields); len(args) > n {
		extra := strings.Join(args[n:], "/")
		if len(args) > n+1 {
			return nil, 0, p.errorf("extra fields %q after %s", extra, fm.fields[n-1])
		}
		return nil, 0, p.errorf("extra field %q after %s", extra, fm.fields[n-1])
	}
	for i, field := range fm.fields {
		switch {
		case i < len(args) && args[i] != "":
		case i < fm.required:
			return nil, 0, p.errorf("missing %s", pieceName(field))
		case i < len(args):
			return nil, 0, p.errorf("missing %s after \"/\"", pieceName(field))
		}
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch name {
	case "seed":
		seed = p.seed(arg(0))
	case "slicer":
		lo, hi, dash := strings.Cut(arg(0), "-")
		switch {
		case lo == "":
			p.fail("missing MIN")
		case dash && hi == "":
			p.fail("missing MAX after \"-\"")
		case !dash:
			hi = lo
		}
		x = Slicer{Min: int(p.size("MIN", lo, math.MaxInt)), Max: int(p.size("MAX", hi, math.MaxInt)),
			Delay: p.dur("DELAY", arg(1)), Dir: dir}
	case "latency":
		d, j, plus := strings.Cut(arg(0), "+")
		switch {
		case d == "":
			p.fail("missing DELAY")
		case plus && j == "":
			p.fail("missing JITTER after \"+\"")
		}
		x = Latency{Delay: p.dur("DELAY", d), Jitter: p.dur("JITTER", j), Dir: dir}
	case "bandwidth":
		x = Bandwidth{BytesPerSecond: int(p.size("BYTES", arg(0), math.MaxInt)), Dir: dir}
	case "stall":
		st := Stall{After: p.size("N", arg(0), math.MaxInt64), Dir: dir}
		if arg(1) != "" {
			st.For = p.dur("FOR", arg(1))
			p.notDefault("FOR", arg(1), st.For == 0, "until the deadline or Close")
		}
		x = st
	case "reset":
		x = ResetAfter{N: p.size("N", arg(0), math.MaxInt64), Dir: dir}
	case "close":
		x = CloseAfter{N: p.size("N", arg(0), math.MaxInt64), Dir: dir}
	case "eagain":
		x = EAGAIN{P: p.prob("P", arg(0)), Dir: dir}
	case "wakeup":
		x = Wakeups{P: p.prob("P", arg(0)), Dir: dir}
	case "drop":
		x = Drop{P: p.prob("P", arg(0)), Dir: dir}
	case "accept":
		a := AcceptErrors{Err: p.errno(arg(0)), P: p.prob("P", arg(1))}
		if arg(2) != "" {
			a.Burst = int(p.size("BURST", arg(2), math.MaxInt))
			p.notDefault("BURST", arg(2), a.Burst == 0, "1")
		}
		x = a
	case "dial":
		d := DialErrors{P: 1}
		if !strings.EqualFold(arg(0), "hang") {
			d.Err = p.errno(arg(0))
		}
		if arg(1) != "" {
			d.P = p.prob("P", arg(1))
			p.notDefault("P", arg(1), d.P == 0, "1")
		}
		x = d
	case "dup":
		x = Duplicate{P: p.prob("P", arg(0))}
	case "reorder":
		r := Reorder{P: p.prob("P", arg(0))}
		if arg(1) != "" {
			r.Delay = p.dur("DELAY", arg(1))
			p.notDefault("DELAY", arg(1), r.Delay == 0, "1ms")
		}
		x = r
	}
	if p.err != nil {
		return nil, 0, p.err
	}
	return x, seed, nil
}

func formNames() string {
	names := make([]string, 0, len(forms))
	for name := range forms {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// parser reads one setting's pieces, keeping the first error, which names
// the piece, says why, and quotes the setting's syntax.
type parser struct {
	syntax string
	err    error
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("%s (syntax: %s)", fmt.Sprintf(format, a...), p.syntax)
}

func (p *parser) fail(format string, a ...any) {
	if p.err == nil {
		p.err = p.errorf(format, a...)
	}
}

// size reads a byte count with an optional k or m suffix (×1024, ×1024²)
// that fits in [-limit-1, limit].
func (p *parser) size(piece, s string, limit int64) int64 {
	digits, mult := s, int64(1)
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		digits, mult = s[:len(s)-1], 1<<10
	case strings.HasSuffix(s, "m"), strings.HasSuffix(s, "M"):
		digits, mult = s[:len(s)-1], 1<<20
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	bits := "int64"
	if limit != math.MaxInt64 {
		bits = "int"
	}
	switch {
	case errors.Is(err, strconv.ErrRange), err == nil && (n > limit/mult || n < (-limit-1)/mult):
		p.fail("%s %q overflows %s", piece, s, bits)
		return 0
	case err != nil:
		p.fail("%s %q is not an integer (k and m suffixes: ×1024, ×1024²)", piece, s)
		return 0
	}
	return n * mult
}

func (p *parser) dur(piece, s string) time.Duration {
	if s == "" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		p.fail("%s %q is not a duration (e.g. 5ms, 1.5s; at most 2562047h)", piece, s)
	}
	return d
}

func (p *parser) prob(piece, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		p.fail("%s %q is not a probability (a number in [0, 1])", piece, s)
	}
	return v
}

func (p *parser) seed(s string) uint64 {
	n, err := strconv.ParseUint(s, 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		p.fail("N %q overflows uint64", s)
	case err != nil:
		p.fail("N %q is not an unsigned integer", s)
	}
	return n
}

func (p *parser) errno(s string) syscall.Errno {
	if n, err := strconv.ParseUint(s, 10, 12); err == nil && n > 0 {
		return syscall.Errno(n) // the number String writes for an errno with no name here
	}
	e, ok := errnoByName[strings.ToUpper(s)]
	if !ok {
		names := slices.Sorted(maps.Keys(errnoByName))
		p.fail("unknown ERRNO %q (want one of %s, or an errno's number)", s, strings.Join(names, ", "))
	}
	return e
}

// notDefault refuses a zero written where the fault reads zero as its
// default, def: what was written would not be what is injected.
func (p *parser) notDefault(piece, s string, zero bool, def string) {
	if zero {
		p.fail("%s %q is zero, which this fault reads as %s: leave it out for %s", piece, s, def, def)
	}
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
	case Both:
		return ".both" // not left out: zero is Write or Read for some faults
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
		return fmt.Sprintf("dial=%s/%g", name, cmp.Or(x.P, 1)) // zero: 1, which Parse wants written
	case Drop:
		return fmt.Sprintf("drop%s=%g", dirSuffix(x.Dir), x.P)
	case Duplicate:
		return fmt.Sprintf("dup=%g", x.P)
	case Reorder:
		return fmt.Sprintf("reorder=%g%s", x.P, fmtDur(x.Delay))
	}
	return fmt.Sprintf("%T", x)
}
