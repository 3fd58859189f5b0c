//go:build linux

package pollfd

// The default poller's configuration from the environment. A mistyped
// variable must not pass unnoticed, nor stop a program that never opens a
// descriptor: Default still returns a poller (with the default for what
// was mistyped), and every Open, OpenShard and OpenLazy on it returns the
// variable's *envconf.Error, so the first socket, pipe or file a program
// makes reports it. A mistyped name counts too: a GATENET_ variable
// gatenet does not read (GATENET_POLER) is refused the same way
// (envconf.Unknown).

import (
	"os"
	"strconv"
	"strings"

	"github.com/gatenet/gatenet/internal/envconf"
)

// What each variable accepts, as its error tells the reader.
const (
	envPoller     = "GATENET_POLLER"
	envPollerWant = "nested or dedicated, then +harvest and/or +rpark, then optionally /N-shards (e.g. nested+harvest+rpark)"
	envShards     = "GATENET_SHARDS"
	envShardsWant = "an integer from 1 to 1024"
)

// optionsFromEnv returns Default's options: DefaultOptions, with
// GATENET_POLLER's strategy and GATENET_SHARDS's shard count where they
// are set and valid (the count follows GOMAXPROCS otherwise, whatever the
// strategy, unless GATENET_POLLER has String's "/N-shards": GATENET_SHARDS
// wins over that). err is the first invalid one's *envconf.Error, in that
// order, then an unknown GATENET_ variable's (envconf.Unknown). Unset,
// empty or blank, a variable keeps the default.
func optionsFromEnv() (opts Options, err error) {
	opts = DefaultOptions()
	if v := os.Getenv(envPoller); strings.TrimSpace(v) != "" {
		if o, perr := parseOptions(v); perr != nil {
			err = &envconf.Error{Var: envPoller, Value: v, Want: envPollerWant, Err: perr}
		} else {
			if o.Shards == 0 {
				o.Shards = opts.Shards // GOMAXPROCS's, unless GATENET_SHARDS says (below)
			}
			opts = o
		}
	}
	if v := os.Getenv(envShards); strings.TrimSpace(v) != "" {
		n, perr := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case perr != nil:
		case n <= 0:
			perr = errNotPositive
		case n > maxShards:
			perr = errTooMany
		}
		if perr != nil {
			if err == nil {
				err = &envconf.Error{Var: envShards, Value: v, Want: envShardsWant, Err: perr}
			}
		} else {
			opts.Shards = n
		}
	}
	if err == nil {
		err = envconf.Unknown(os.Environ())
	}
	return opts, err
}
