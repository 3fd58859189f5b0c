//go:build linux

package pollfd

// The default poller's configuration from the environment. A mistyped
// variable must not pass unnoticed, nor stop a program that never opens a
// descriptor: Default still returns a poller (with the default for what
// was mistyped), and every Open, OpenShard and OpenLazy on it returns the
// variable's *envconf.Error, so the first socket, pipe or file a program
// makes reports it.

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"github.com/gatenet/gatenet/internal/envconf"
)

// What each variable accepts, as its error tells the reader.
const (
	envPoller     = "GATENET_POLLER"
	envPollerWant = "nested or dedicated, then +harvest and/or +rpark (e.g. nested+harvest+rpark)"
	envShards     = "GATENET_SHARDS"
	envShardsWant = "a positive integer"
)

var errNotPositive = errors.New("not positive")

// optionsFromEnv returns Default's options: DefaultOptions, with
// GATENET_POLLER's strategy and GATENET_SHARDS's shard count where they
// are set and valid (the count follows GOMAXPROCS otherwise, whatever the
// strategy). err is the first invalid one's *envconf.Error. Unset,
// empty or blank, a variable keeps the default.
func optionsFromEnv() (opts Options, err error) {
	opts = DefaultOptions()
	if v := os.Getenv(envPoller); strings.TrimSpace(v) != "" {
		if o, perr := parseOptions(v); perr != nil {
			err = &envconf.Error{Var: envPoller, Value: v, Want: envPollerWant, Err: perr}
		} else {
			o.Shards = opts.Shards // GATENET_SHARDS's, or GOMAXPROCS's
			opts = o
		}
	}
	if v := os.Getenv(envShards); v != "" {
		n, perr := strconv.Atoi(v)
		if perr == nil && n <= 0 {
			perr = errNotPositive
		}
		if perr != nil {
			if err == nil {
				err = &envconf.Error{Var: envShards, Value: v, Want: envShardsWant, Err: perr}
			}
		} else {
			opts.Shards = n
		}
	}
	return opts, err
}
