//go:build !linux

package pollfd

import (
	"context"
	"errors"
	"time"
)

// Off Linux there is no epoll: the poller's behaviour is stubbed here so
// that code naming it compiles, and New and Open report
// errors.ErrUnsupported. The declarations themselves (Mode, the errors,
// Options, Strategy, ParseOptions, Stats) are types.go's, shared with
// Linux.

type Poller struct{ opts Options }

type Desc struct{}

func Default() *Poller                                  { return &Poller{opts: DefaultOptions()} }
func New(Options) (*Poller, error)                      { return nil, errors.ErrUnsupported }
func (p *Poller) Options() Options                      { return p.opts }
func (p *Poller) Open(int) (*Desc, error)               { return nil, errors.ErrUnsupported }
func (p *Poller) OpenShard(int, int) (*Desc, error)     { return nil, errors.ErrUnsupported }
func (p *Poller) OpenLazy(int, int) (*Desc, error)      { return nil, errors.ErrUnsupported }
func (p *Poller) Shards() int                           { return 0 }
func (p *Poller) ShardFor(uint64) int                   { return 0 }
func (p *Poller) Close() error                          { return nil }
func (p *Poller) ShardStats() []Stats                   { return nil }
func (p *Poller) Stats() Stats                          { return Stats{} }
func (p *Poller) IsPollDescriptor(int) bool             { return false }
func IsPollDescriptor(int) bool                         { return false }
func (d *Desc) Prepare(Mode) error                      { return errors.ErrUnsupported }
func (d *Desc) Wait(Mode) error                         { return errors.ErrUnsupported }
func (d *Desc) WaitContext(context.Context, Mode) error { return errors.ErrUnsupported }
func (d *Desc) SetDeadline(time.Time, Mode) error       { return errors.ErrUnsupported }
func (d *Desc) Unblock()                                {}
func (d *Desc) Close() error                            { return errors.ErrUnsupported }
