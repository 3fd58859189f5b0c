//go:build !linux

package pollfd

import (
	"context"
	"errors"
	"time"
)

// Off Linux there is no epoll: the types exist so that code naming them
// compiles, and New and Open report errors.ErrUnsupported.

type Mode int

const (
	ModeRead      Mode = 'r'
	ModeWrite     Mode = 'w'
	ModeReadWrite Mode = 'r' + 'w'
)

var (
	ErrClosing     = errors.New("pollfd: descriptor is closing")
	ErrTimeout     = errors.New("pollfd: deadline exceeded")
	ErrNotPollable = errors.New("not pollable")
)

type Strategy int

const (
	Nested Strategy = iota
	Dedicated
)

type Options struct {
	Strategy Strategy
	Harvest  bool
	Shards   int
}

type Stats struct {
	Registered, DrainLoops                                         int64
	DrainStarts                                                    uint64
	EpollWaits, Events, StaleEvents, Parks, ParksInSlot, EINTR     uint64
	TimerFires, Harvests, HarvestsDeferred                         uint64
	Runnable                                                       int64
	Wakeups, WakeupsEvent, WakeupsDeadline, WakeupsClose, Canceled uint64
	EventsPerWait                                                  [9]uint64
}

type Poller struct{}

type Desc struct{}

func DefaultOptions() Options                           { return Options{} }
func Default() *Poller                                  { return &Poller{} }
func New(Options) (*Poller, error)                      { return nil, errors.ErrUnsupported }
func (p *Poller) Open(int) (*Desc, error)               { return nil, errors.ErrUnsupported }
func (p *Poller) Close() error                          { return nil }
func (p *Poller) ShardStats() []Stats                   { return nil }
func (p *Poller) Stats() Stats                          { return Stats{} }
func (p *Poller) IsPollDescriptor(int) bool             { return false }
func PublishExpvar(string)                              {}
func IsPollDescriptor(int) bool                         { return false }
func (d *Desc) Prepare(Mode) error                      { return errors.ErrUnsupported }
func (d *Desc) Wait(Mode) error                         { return errors.ErrUnsupported }
func (d *Desc) WaitContext(context.Context, Mode) error { return errors.ErrUnsupported }
func (d *Desc) SetDeadline(time.Time, Mode) error       { return errors.ErrUnsupported }
func (d *Desc) Unblock()                                {}
func (d *Desc) Close() error                            { return errors.ErrUnsupported }
