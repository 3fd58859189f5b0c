//go:build linux

package gatenet

import (
	"errors"
	"os"
	"sync"

	"github.com/gatenet/gatenet/faults"
	"github.com/gatenet/gatenet/internal/envconf"
	"github.com/gatenet/gatenet/internal/poll"
)

// The GATENET_ environment variables. GATENET_POLLER and GATENET_SHARDS
// configure pollfd.Default, whose Open refuses every descriptor while one
// is invalid; GATENET_FAULTS is read here. A GATENET_ variable gatenet
// does not read (a misspelling: GATENET_POLER, GATENET_FAULT) is refused
// by both (envconf.Unknown), so that it is reported with a Poller of one's
// own too. Either way the error is an *envconf.Error naming the variable,
// its value and the valid syntax, and every constructor returns it
// (NewFile, which has no error to return, from each operation), so that a
// mistyped variable cannot go unseen.

// envFaults is GATENET_FAULTS, parsed once; its error is GATENET_FAULTS's,
// else an unknown GATENET_ variable's.
var envFaults = sync.OnceValues(func() (*faults.Faults, error) {
	return faultsFromEnv(os.Getenv(faults.EnvVar), os.Environ())
})

// faultsFromEnv is envFaults for GATENET_FAULTS=spec in environ.
func faultsFromEnv(spec string, environ []string) (*faults.Faults, error) {
	f, err := faults.Parse(spec)
	if err != nil {
		return nil, &envconf.Error{Var: faults.EnvVar, Value: spec, Err: err,
			Want: "';'-separated name[.read|.write|.both]=value settings, as faults.Parse reads them (e.g. slicer=1-7;seed=42)"}
	}
	if err := envconf.Unknown(environ); err != nil {
		return nil, err
	}
	return f, nil
}

// envError is the environment's error for a descriptor being set up:
// regErr itself if the poller refused it for an invalid variable, else
// GATENET_FAULTS's error, else nil. Any other registration error is left
// to the caller.
func envError(regErr error) error {
	if _, ok := errors.AsType[*envconf.Error](regErr); ok {
		return regErr
	}
	_, err := envFaults()
	return err
}

// attachEnvFaults attaches GATENET_FAULTS's faults, if any, to fd.
func attachEnvFaults(fd *poll.FD) error {
	f, err := envFaults()
	if err != nil || f == nil {
		return err
	}
	return fd.SetFaults(f)
}
