package faults

import (
	"errors"
	"fmt"
	"math"
	"syscall"
	"time"
)

// plan is a validated fault list sorted by where each acts.
type plan struct {
	dirs    [2]dirPlan // [0] reads, [1] writes
	accept  *AcceptErrors
	dial    *DialErrors
	dup     float64
	reorder *Reorder
}

type dirPlan struct {
	slicer    *Slicer
	latency   *Latency
	bandwidth int
	stall     *Stall
	reset     int64 // -1: none
	close     int64 // -1: none
	eagain    float64
	wakeup    float64
	drop      float64
}

func (d Dir) index() int { return int(d >> 1) } // Read 0, Write 1

// applies reports whether a fault with dir (zero: def) acts in direction
// i (0 reads, 1 writes).
func applies(dir, def Dir, i int) bool {
	if dir == 0 {
		dir = def
	}
	return dir&(1<<i) != 0
}

func compile(fs []Fault) (plan, error) {
	var p plan
	for i := range p.dirs {
		p.dirs[i].reset, p.dirs[i].close = -1, -1
	}
	// set applies f to the plan of each direction dir (zero: def) names.
	var badDir Dir
	set := func(dir, def Dir, f func(*dirPlan)) {
		if dir&^Both != 0 {
			badDir = dir
		}
		for i := range p.dirs {
			if applies(dir, def, i) {
				f(&p.dirs[i])
			}
		}
	}
	prob := func(x Fault, v float64) error {
		if v < 0 || v > 1 || v != v {
			return fmt.Errorf("faults: %s: probability %g is not in [0, 1]", format(x), v)
		}
		return nil
	}
	for _, x := range fs {
		var err error
		switch x := x.(type) {
		case Slicer:
			if x.Min < 1 || x.Max < x.Min || x.Delay < 0 {
				err = fmt.Errorf("faults: %s: want 1 ≤ Min ≤ Max and Delay ≥ 0", format(x))
			}
			set(x.Dir, Both, func(d *dirPlan) { d.slicer = &x })
		case Latency:
			switch {
			case x.Delay < 0 || x.Jitter < 0:
				err = fmt.Errorf("faults: %s: negative delay", format(x))
			case x.Delay > math.MaxInt64-x.Jitter:
				err = fmt.Errorf("faults: %s: Delay plus Jitter overflows a time.Duration", format(x))
			}
			set(x.Dir, Write, func(d *dirPlan) { d.latency = &x })
		case Bandwidth:
			if x.BytesPerSecond < 1 {
				err = fmt.Errorf("faults: %s: want BytesPerSecond ≥ 1", format(x))
			}
			set(x.Dir, Both, func(d *dirPlan) { d.bandwidth = x.BytesPerSecond })
		case Stall:
			if x.After < 0 || x.For < 0 {
				err = fmt.Errorf("faults: %s: negative size or duration", format(x))
			}
			set(x.Dir, Read, func(d *dirPlan) { d.stall = &x })
		case ResetAfter:
			if x.N < 0 {
				err = fmt.Errorf("faults: %s: negative size", format(x))
			}
			set(x.Dir, Write, func(d *dirPlan) { d.reset = x.N })
		case CloseAfter:
			if x.N < 0 {
				err = fmt.Errorf("faults: %s: negative size", format(x))
			}
			set(x.Dir, Write, func(d *dirPlan) { d.close = x.N })
		case EAGAIN:
			err = prob(x, x.P)
			set(x.Dir, Both, func(d *dirPlan) { d.eagain = x.P })
		case Wakeups:
			err = prob(x, x.P)
			set(x.Dir, Both, func(d *dirPlan) { d.wakeup = x.P })
		case Drop:
			err = prob(x, x.P)
			set(x.Dir, Both, func(d *dirPlan) { d.drop = x.P })
		case AcceptErrors:
			err = prob(x, x.P)
			if x.Err == 0 || x.Burst < 0 {
				err = fmt.Errorf("faults: %s: want an errno and Burst ≥ 0", format(x))
			} else if x.Err > maxErrno {
				err = errnoRange(x, x.Err)
			}
			x.Burst = max(x.Burst, 1)
			p.accept = &x
		case DialErrors:
			err = prob(x, x.P)
			if x.Err > maxErrno {
				err = errnoRange(x, x.Err)
			}
			if x.P == 0 {
				x.P = 1
			}
			p.dial = &x
		case Duplicate:
			err = prob(x, x.P)
			p.dup = x.P
		case Reorder:
			err = prob(x, x.P)
			if x.Delay < 0 {
				err = fmt.Errorf("faults: %s: negative delay", format(x))
			}
			if x.Delay == 0 {
				x.Delay = time.Millisecond
			}
			p.reorder = &x
		case nil:
			err = errors.New("faults: a nil Fault")
		default:
			err = fmt.Errorf("faults: %T is not a fault of this package", x)
		}
		if err == nil && badDir != 0 {
			err = fmt.Errorf("faults: %s: Dir %v is not Read, Write or Both", format(x), badDir)
		}
		if err != nil {
			return plan{}, err
		}
	}
	return p, nil
}

// maxErrno is the kernel's last errno (MAX_ERRNO): a system call's error
// is never past it, and Parse reads an errno's number up to it.
const maxErrno = 4095

// errnoRange is Validate's error for an errno past maxErrno.
func errnoRange(f Fault, e syscall.Errno) error {
	return fmt.Errorf("faults: %s: errno %d is past %d, the kernel's last", format(f), uint(e), maxErrno)
}
