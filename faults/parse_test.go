package faults_test

import (
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/faults"
)

// strictCases are specs Parse once accepted as something other than what
// was written (a wrapped number, a dropped field or direction, a missing
// piece read as zero), each with what its error must say: the piece and
// why. Every error also quotes the setting and its syntax.
var strictCases = []struct{ spec, want string }{
	// A number that overflows is refused, naming it as written.
	{"reset=18014398509481985k", `N "18014398509481985k" overflows int64`},
	{"stall=18014398509481985k/1s", `N "18014398509481985k" overflows int64`},
	{"bandwidth=9223372036854775807k", `BYTES "9223372036854775807k" overflows int`},
	{"reset=99999999999999999999", `N "99999999999999999999" overflows int64`},
	{"close=-9223372036854775807m", `N "-9223372036854775807m" overflows int64`},
	{"slicer=1-9007199254740993k", `MAX "9007199254740993k" overflows int`},
	{"seed=18446744073709551616", `N "18446744073709551616" overflows uint64`},
	// An extra '/' field.
	{"latency=1ms/garbage", `extra field "garbage"`},
	{"reset=1/2/3", `extra fields "2/3"`},
	{"eagain=0.5/junk", `extra field "junk"`},
	{"slicer=1-7/1ms/zz", `extra field "zz"`},
	{"bandwidth=1m/xyz", `extra field "xyz"`},
	{"reorder=0.5/1ms/2", `extra field "2"`},
	{"accept=EMFILE/0.1/5/6", `extra field "6"`},
	{"dial=hang/1/2", `extra field "2"`},
	// A direction on a fault that has none, or an empty one.
	{"accept.read=EMFILE/0.1", `accept takes no direction, so ".read" means nothing`},
	{"dial.write=hang", `dial takes no direction, so ".write" means nothing`},
	{"dup.read=0.5", `dup takes no direction, so ".read" means nothing`},
	{"reorder.write=0.5", `reorder takes no direction`},
	{"seed.read=3", `seed takes no direction`},
	{"slicer.=1-2", `empty direction after "slicer."`},
	// A missing piece.
	{"latency=", `missing DELAY`},
	{"latency=+", `missing DELAY`},
	{"latency=+2ms", `missing DELAY`},
	{"latency=5ms+", `missing JITTER after "+"`},
	{"eagain=", `missing P`},
	{"wakeup=", `missing P`},
	{"drop=", `missing P`},
	{"dup=", `missing P`},
	{"reset=", `missing N`},
	{"bandwidth=", `missing BYTES`},
	{"slicer=1-", `missing MAX after "-"`},
	{"slicer=-7", `missing MIN`},
	{"slicer=1-7/", `missing DELAY after "/"`},
	{"stall=4096/", `missing FOR after "/"`},
	{"accept=EMFILE", `missing P`},
	{"accept=EMFILE/", `missing P (`},
	{"accept=/0.5", `missing ERRNO`},
	{"dial=", `missing ERRNO|hang`},
	{"seed=", `missing N`},
	// A zero the fault would read as its default.
	{"dial=hang/0", `P "0" is zero, which this fault reads as 1`},
	{"reorder=0.5/0s", `DELAY "0s" is zero, which this fault reads as 1ms`},
	{"accept=EMFILE/0.1/0", `BURST "0" is zero, which this fault reads as 1`},
	{"stall=10/0s", `FOR "0s" is zero, which this fault reads as until the deadline or Close`},
	{"stall.read=10/0.5ns", `FOR "0.5ns" is zero`},
	// Pieces that are not what they should be.
	{"slicer=a-b", `MIN "a" is not an integer`},
	{"reset=k", `N "k" is not an integer`},
	{"latency=5", `DELAY "5" is not a duration`},
	{"eagain=half", `P "half" is not a probability`},
	{"accept=EWHAT/0.1", `unknown ERRNO "EWHAT"`},
	{"slicer.up=1-2", `direction "up" is neither read, write nor both`},
	{"nosuch=1", `unknown fault "nosuch"`},
}

// TestParseStrict: each spec of strictCases is refused, alone or among
// valid settings, with an error naming the setting, the piece and why.
func TestParseStrict(t *testing.T) {
	for _, tc := range strictCases {
		for _, spec := range []string{tc.spec, "seed=7;slicer=1-7;" + tc.spec + ";latency=1ms"} {
			f, err := faults.Parse(spec)
			require.Nil(t, f, spec)
			require.Error(t, err, spec)
			msg := err.Error()
			require.True(t, strings.HasPrefix(msg, "faults: \""+tc.spec+"\": "), "%s: %s", spec, msg)
			require.Contains(t, msg, tc.want, spec)
			if !strings.HasPrefix(tc.want, "unknown fault") {
				require.Contains(t, msg, "(syntax: ", spec)
			}
		}
	}
}

// validSpecs are specs Parse accepts, and what each reads as.
var validSpecs = []struct{ spec, want string }{
	{"slicer=1-7", "seed=1;slicer=1-7"},
	{"slicer=3", "seed=1;slicer=3-3"},
	{"slicer.read=1k-2K/1ms", "seed=1;slicer.read=1024-2048/1ms"},
	{"slicer=1-7/0s", "seed=1;slicer=1-7"},
	{"latency=5ms+2ms", "seed=1;latency=5ms+2ms"},
	{"latency.read=0", "seed=1;latency.read=0s"},
	{"bandwidth=1m", "seed=1;bandwidth=1048576"},
	{"bandwidth.write=2047m", "seed=1;bandwidth.write=2146435072"},
	{"stall.read=4096/100ms", "seed=1;stall.read=4096/100ms"},
	{"stall=1", "seed=1;stall=1"},
	{"stall.both=1/1s;latency.both=5ms;reset.both=7;close.both=8", "seed=1;stall.both=1/1s;latency.both=5ms;reset.both=7;close.both=8"},
	{"slicer.both=1-2", "seed=1;slicer.both=1-2"},
	{"accept=11/0.5", "seed=1;accept=11/0.5/1"},
	{"dial=22", "seed=1;dial=22/1"},
	{"reset=9223372036854775807", "seed=1;reset=9223372036854775807"},
	{"close.read=20", "seed=1;close.read=20"},
	{"eagain=0.5;wakeup.write=0.25;drop.read=0", "seed=1;eagain=0.5;wakeup.write=0.25;drop.read=0"},
	{"accept=emfile/0.1", "seed=1;accept=EMFILE/0.1/1"},
	{"accept=EMFILE/0/5", "seed=1;accept=EMFILE/0/5"},
	{"dial=hang", "seed=1;dial=hang/1"},
	{"dial=ECONNREFUSED/0.5", "seed=1;dial=ECONNREFUSED/0.5"},
	{"dup=0.2;reorder=0.3", "seed=1;dup=0.2;reorder=0.3"},
	{" seed=18446744073709551615 ; ; reorder=1/10ms; ", "seed=18446744073709551615;reorder=1/10ms"},
}

func TestParseValid(t *testing.T) {
	for _, tc := range validSpecs {
		f, err := faults.Parse(tc.spec)
		require.NoError(t, err, tc.spec)
		require.Equal(t, tc.want, f.String(), tc.spec)
	}
	// What New builds with zeros that mean a default renders as Parse
	// wants it written.
	f := faults.New(3, faults.DialErrors{}, faults.Reorder{P: 0.5}, faults.AcceptErrors{Err: 24, P: 0.1})
	require.Equal(t, "seed=3;dial=hang/1;reorder=0.5;accept=EMFILE/0.1/1", f.String())
	again, err := faults.Parse(f.String())
	require.NoError(t, err)
	require.Equal(t, f.String(), again.String())
}

// TestStringReadsBack: every Faults value Validate accepts renders as a
// spec that Parse reads back to the same faults: Dir Both where a fault's
// zero Dir is one direction (String dropped it, and Parse read the
// default), and an errno with no name in the syntax (String wrote a
// number that Parse refused).
func TestStringReadsBack(t *testing.T) {
	f := faults.New(7,
		faults.Latency{Delay: 5 * time.Millisecond, Dir: faults.Both},
		faults.Stall{After: 1, For: time.Second, Dir: faults.Both},
		faults.ResetAfter{N: 1, Dir: faults.Both},
		faults.CloseAfter{N: 2, Dir: faults.Both},
		faults.Slicer{Min: 1, Max: 2, Dir: faults.Both},
		faults.AcceptErrors{Err: syscall.EAGAIN, P: 0.5, Burst: 1},
		faults.DialErrors{Err: syscall.EINVAL, P: 0.5},
	)
	require.NoError(t, f.Validate())
	again, err := faults.Parse(f.String())
	require.NoError(t, err, f.String())
	require.Equal(t, f.Faults, again.Faults, f.String())
}

// TestValidateRefuses: settings that make no sense, or that the injector
// would misread, are Validate's errors: a Dir that is not Read, Write or
// Both (it injected nothing, and its String parsed into a fault that
// did), and a Latency whose Delay plus Jitter overflows (a negative
// delay: no delay at all).
func TestValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		fault faults.Fault
		want  string
	}{
		{faults.Slicer{Min: 1, Max: 1, Dir: 4}, "Dir Dir(4) is not Read, Write or Both"},
		{faults.EAGAIN{P: 0.5, Dir: 255}, "Dir Dir(255) is not Read, Write or Both"},
		{faults.Latency{Delay: math.MaxInt64 - 1, Jitter: 2}, "Delay plus Jitter overflows"},
		// Past the kernel's last errno (MAX_ERRNO, 4095), which Parse reads
		// as a number: String's form of it would not read back.
		{faults.DialErrors{Err: syscall.Errno(5000), P: 1}, "errno 5000 is past 4095"},
		{faults.AcceptErrors{Err: syscall.Errno(4096), P: 0.5}, "errno 4096 is past 4095"},
	} {
		require.ErrorContains(t, faults.New(1, tc.fault).Validate(), tc.want, "%#v", tc.fault)
	}
	_, err := faults.Parse("latency=2562047h+2562047h")
	require.ErrorContains(t, err, "Delay plus Jitter overflows")
}

// FuzzParse: Parse never panics, and whatever it accepts String writes so
// that Parse reads it back to the same faults, rendered identically.
func FuzzParse(f *testing.F) {
	for _, tc := range strictCases {
		f.Add(tc.spec)
	}
	for _, tc := range validSpecs {
		f.Add(tc.spec)
	}
	for _, s := range []string{
		"seed=42;slicer=1-7",
		"seed=1;slicer.read=1-3/1ms;latency.write=5ms+2ms;bandwidth=1048576",
		"seed=9;stall.read=4096/100ms;reset=10;close.read=20",
		"seed=3;eagain=0.5;wakeup.write=0.25",
		"seed=3;accept=EMFILE/0.1/5;dial=ECONNREFUSED/0.5;dial=hang/1",
		"seed=3;drop=0.1;dup=0.2;reorder=0.3/10ms",
		"slicer.read=1-7; latency.write=5ms+2ms; seed=42",
		"slicer=1-7;bandwidth=1m;seed=5",
		"slicer.read=1-3;seed=7",
		"latency=2562047h47m16.854775807s+1ns",
		"eagain=1e-300;drop=0x1p-2;wakeup=-0",
		"\u2000",                               // white space beyond Latin-1: no faults
		"\u3000latency=1ms;\u2028seed=2\u205f", // and trimmed around settings
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		x, err := faults.Parse(spec)
		if err != nil {
			if x != nil {
				t.Fatalf("Parse(%q) = %v and error %v", spec, x, err)
			}
			if !strings.HasPrefix(err.Error(), "faults: ") {
				t.Fatalf("Parse(%q): error %q lacks the faults: prefix", spec, err)
			}
			return
		}
		if x == nil {
			if strings.TrimSpace(spec) != "" { // Unicode's white space, as Parse trims
				t.Fatalf("Parse(%q) = nil, nil", spec)
			}
			return
		}
		s := x.String()
		again, err := faults.Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q) = %v, whose String does not parse: %v", spec, s, err)
		}
		if s2 := again.String(); s2 != s {
			t.Fatalf("Parse(%q): String %q reads back as %q", spec, s, s2)
		}
	})
}
