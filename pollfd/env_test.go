//go:build linux

package pollfd_test

import (
	"cmp"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet/internal/envconf"
	"github.com/gatenet/gatenet/pollfd"
)

// TestDefaultFromEnvironment runs TestDefaultEnvChild in a child process
// (Default reads the environment once per process) for each setting: an
// invalid GATENET_POLLER or GATENET_SHARDS is every Open's error on the
// default poller, naming the variable, its value and the valid syntax;
// unset, empty or blank ones keep the default. The shard count follows
// the child's GOMAXPROCS (ShardsFor) unless GATENET_SHARDS sets it,
// whatever GATENET_POLLER says. GATENET_SHARDS is at most 1024, and a
// GATENET_ variable gatenet does not read is refused as an invalid one is.
func TestDefaultFromEnvironment(t *testing.T) {
	for _, tc := range []struct{ poller, shards, want, procs, extra string }{
		{"x", "", "GATENET_POLLER", "", ""},
		{"nested+harvest+bogus", "", "GATENET_POLLER", "", ""},
		{"nested+harvest+harvest", "", "GATENET_POLLER", "", ""},
		{"nested", "0", "GATENET_SHARDS", "", ""},
		{"nested", "-1", "GATENET_SHARDS", "", ""},
		{"nested", "x", "GATENET_SHARDS", "", ""},
		{"nested", "1.5", "GATENET_SHARDS", "", ""},
		{"x", "0", "GATENET_POLLER", "", ""}, // the first invalid one is reported
		{"", "", "ok", "", ""},
		{"  ", "", "ok", "", ""},
		{"", " ", "ok", "", ""}, // blank: the default, as for GATENET_POLLER
		{"", "\t", "ok", "", ""},
		{"", " 2 ", "ok", "", ""}, // trimmed, as GATENET_POLLER is
		{"dedicated+harvest", "2", "ok", "", ""},
		{"", "", "ok", "16", ""},               // 4 shards
		{"nested+harvest", "", "ok", "16", ""}, // 4 shards: the strategy leaves the count alone
		{"", "2", "ok", "16", ""},              // GATENET_SHARDS wins
		{"", "", "ok", "5", ""},                // 2 shards
		{"nested", "x", "GATENET_SHARDS", "16", ""},
		{"nested", "100000", "GATENET_SHARDS", "", ""},
		{"nested", "1025", "GATENET_SHARDS", "", ""},
		{"", "1024", "ok", "", ""},
		{"", "", "GATENET_POLER", "", "GATENET_POLER=nested"},
		{"", "", "GATENET_NOSUCH", "", "GATENET_NOSUCH="},
		{"x", "", "GATENET_POLLER", "", "GATENET_POLER=nested"}, // the known one's error first
		{"", "", "ok", "", "GATENET_SOAK=1"},                    // test-only ones are known
		{"nested+harvest+rpark/2-shards", "", "ok", "8", ""},    // String's form, shards included
		{"nested/3-shards", "2", "ok", "", ""},                  // GATENET_SHARDS wins
		{"nested/0-shards", "", "GATENET_POLLER", "", ""},
		{"nested/2", "", "GATENET_POLLER", "", ""},
		{"nested/1025-shards", "", "GATENET_POLLER", "", ""},
	} {
		procs := cmp.Or(tc.procs, "2")
		t.Run(tc.poller+"/"+tc.shards+"/"+procs+"/"+tc.extra, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultEnvChild$", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+procs,
				"GATENET_POLLER="+tc.poller, "GATENET_SHARDS="+tc.shards, "GATENET_ENV_CHILD="+tc.want)
			if tc.extra != "" {
				cmd.Env = append(cmd.Env, tc.extra)
			}
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.Contains(t, string(out), "--- PASS: TestDefaultEnvChild")
		})
	}
}

func TestDefaultEnvChild(t *testing.T) {
	want := os.Getenv("GATENET_ENV_CHILD")
	if want == "" {
		t.Skip("run by TestDefaultFromEnvironment")
	}
	p := pollfd.Default()
	r, _ := newPipe(t)
	if want == "ok" {
		opts, err := pollfd.ParseOptions(os.Getenv("GATENET_POLLER"))
		if strings.TrimSpace(os.Getenv("GATENET_POLLER")) == "" {
			opts, err = pollfd.DefaultOptions(), nil
		}
		require.NoError(t, err)
		if opts.Shards == 0 {
			opts.Shards = pollfd.ShardsFor(runtime.GOMAXPROCS(0))
		}
		if s := strings.TrimSpace(os.Getenv("GATENET_SHARDS")); s != "" {
			n, err := strconv.Atoi(s)
			require.NoError(t, err)
			opts.Shards = n
		}
		require.Equal(t, opts, p.Options())
		require.Equal(t, opts.Shards, p.Shards())
		d, err := p.Open(r)
		require.NoError(t, err)
		d.Unblock()
		require.NoError(t, d.Close())
		return
	}
	value := os.Getenv(want)
	syntax := map[string]string{
		"GATENET_POLLER": "nested or dedicated, then +harvest and/or +rpark, then optionally /N-shards (e.g. nested+harvest+rpark)",
		"GATENET_SHARDS": "an integer from 1 to 1024",
	}[want]
	if syntax == "" { // a name gatenet does not read
		syntax = "GATENET_POLLER, GATENET_SHARDS or GATENET_FAULTS; test-only ones: docs/TESTING.md"
	}
	// The default in place of what was mistyped.
	switch want {
	case "GATENET_POLLER":
		require.Equal(t, pollfd.DefaultOptions(), p.Options())
	case "GATENET_SHARDS":
		require.Equal(t, pollfd.ShardsFor(runtime.GOMAXPROCS(0)), p.Shards())
	default:
		require.Equal(t, pollfd.DefaultOptions(), p.Options(), "GATENET_POLLER and GATENET_SHARDS are empty")
	}
	opens := map[string]func() (*pollfd.Desc, error){
		"Open":      func() (*pollfd.Desc, error) { return p.Open(r) },
		"OpenShard": func() (*pollfd.Desc, error) { return p.OpenShard(r, 0) },
		"OpenLazy":  func() (*pollfd.Desc, error) { return p.OpenLazy(r, -1) },
	}
	for name, open := range opens {
		d, err := open()
		require.Nil(t, d, name)
		var ee *envconf.Error
		require.True(t, errors.As(err, &ee), "%s: %v is not an *envconf.Error", name, err)
		require.Equal(t, want, ee.Var, name)
		require.Equal(t, value, ee.Value, name)
		require.Equal(t, syntax, ee.Want, name)
		require.Contains(t, err.Error(), want, name)
		require.Contains(t, err.Error(), syntax, name)
		t.Logf("%s: %v", name, err)
	}
	st := p.Stats()
	require.Zero(t, st.Registered, "no registration")
	require.Zero(t, st.EpollAdds, "no registration")
}
