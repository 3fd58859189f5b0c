//go:build linux

package reliability_test

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet"
)

// A user-space netem, for kernels without sch_netem. The two namespaces
// are joined by two TUN devices (point-to-point, 10.213.0.1 peer
// 10.213.0.2 and the reverse, MTU 1500), each created inside its
// namespace, and a relay in the test process moves IP packets between
// their descriptors (gatenet Files: deadlines and close-unblock make
// stopping clean). Per direction, as `netem delay 5ms 2ms loss 1%
// reorder 5%`:
//
//   - a reader goroutine drops 1% of packets, sends 5% "now" (they jump
//     ahead of every packet still queued: netem's reorder) and schedules
//     the rest 5 ms ± 2 ms later; jitter alone keeps the order (a release
//     is never before its predecessor's), so reordering is the 5% only;
//   - a writer goroutine releases packets from a time-ordered heap with a
//     single timer; the heap holds at most tunQueueLimit packets (netem's
//     default limit), beyond which packets are dropped as on a full link.
//
// The random choices come from a fixed seed, logged; GATENET_NETEM_SEED
// replays another. cut blackholes both directions (a vanished peer).

const (
	tunDelay      = 5 * time.Millisecond
	tunJitter     = 2 * time.Millisecond
	tunLoss       = 0.01
	tunReorder    = 0.05
	tunQueueLimit = 1000
	tunMTU        = 1500
	tunSeed       = 0x6761746e6574 // "gatnet"
)

// tunPacket is one IP packet waiting for its release.
type tunPacket struct {
	release time.Time
	seq     uint64 // ties broken in arrival order
	buf     []byte
}

type tunQueue []*tunPacket

func (q tunQueue) Len() int { return len(q) }
func (q tunQueue) Less(i, j int) bool {
	if c := q[i].release.Compare(q[j].release); c != 0 {
		return c < 0
	}
	return q[i].seq < q[j].seq
}
func (q tunQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *tunQueue) Push(x any)   { *q = append(*q, x.(*tunPacket)) }
func (q *tunQueue) Pop() any {
	old := *q
	p := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return p
}

// tunStats counts one direction's packets.
type tunStats struct {
	Relayed   int64 // written to the far tun
	Lost      int64 // dropped by the 1% loss
	Overflow  int64 // dropped because the queue was full
	Reordered int64 // sent ahead of a packet still queued
	Cut       int64 // dropped after cut
}

func (s tunStats) String() string {
	return fmt.Sprintf("relayed %d, lost %d, overflow %d, reordered %d, cut %d",
		s.Relayed, s.Lost, s.Overflow, s.Reordered, s.Cut)
}

// tunDir is one direction of the relay: packets read from in, released
// to out.
type tunDir struct {
	name    string
	in, out *gatenet.File
	rng     *rand.Rand // the reader goroutine's only
	wake    chan struct{}

	mu       sync.Mutex
	q        tunQueue
	lastFIFO time.Time // release of the last in-order packet
	seq      uint64

	relayed, lost, overflow, reordered, cut atomic.Int64
}

func (d *tunDir) stats() tunStats {
	return tunStats{d.relayed.Load(), d.lost.Load(), d.overflow.Load(), d.reordered.Load(), d.cut.Load()}
}

// tunRelay is the link: two directions, a→b and b→a.
type tunRelay struct {
	seed      uint64
	files     [2]*gatenet.File // the tun in a, the tun in b
	dirs      [2]*tunDir
	done      chan struct{}
	stopping  atomic.Bool
	blackhole atomic.Bool
	wg        sync.WaitGroup
	bufs      sync.Pool

	errMu sync.Mutex
	err   error // the first unexpected read or write error
}

// openTun creates TUN device name (IFF_TUN|IFF_NO_PI) in namespace ns: the
// device belongs to the namespace /dev/net/tun was opened in.
func openTun(ns, name string) (*gatenet.File, error) {
	var fd int
	err := inNetns(ns, func() error {
		var err error
		fd, err = unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		ifr, err := unix.NewIfreq(name)
		if err != nil {
			unix.Close(fd)
			return err
		}
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
			unix.Close(fd)
			return fmt.Errorf("TUNSETIFF %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return gatenet.NewFile(uintptr(fd), "/dev/net/tun:"+name), nil
}

// newTunLink joins p.a and p.b by TUN devices p.la and p.lb and starts the
// relay, stopped (descriptors closed, devices gone) when t ends.
func newTunLink(t *testing.T, p *netnsPair) (*tunRelay, error) {
	t.Helper()
	fa, err := openTun(p.a, p.la)
	if err != nil {
		return nil, err
	}
	fb, err := openTun(p.b, p.lb)
	if err != nil {
		fa.Close()
		return nil, err
	}
	for _, c := range [][]string{
		{"-n", p.a, "addr", "add", netemAddrA, "peer", netemAddrB, "dev", p.la},
		{"-n", p.b, "addr", "add", netemAddrB, "peer", netemAddrA, "dev", p.lb},
		{"-n", p.a, "link", "set", p.la, "mtu", strconv.Itoa(tunMTU), "up"},
		{"-n", p.b, "link", "set", p.lb, "mtu", strconv.Itoa(tunMTU), "up"},
	} {
		if err := ipCmd(c...); err != nil {
			fa.Close()
			fb.Close()
			return nil, err
		}
	}
	seed := uint64(tunSeed)
	if s := os.Getenv("GATENET_NETEM_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 0, 64); err != nil {
			fa.Close()
			fb.Close()
			return nil, fmt.Errorf("GATENET_NETEM_SEED: %w", err)
		}
	}
	r := &tunRelay{seed: seed, files: [2]*gatenet.File{fa, fb}, done: make(chan struct{})}
	r.bufs.New = func() any { return new([tunMTU + 64]byte) }
	r.dirs[0] = &tunDir{name: "a→b", in: fa, out: fb, rng: rand.New(rand.NewPCG(seed, 0)), wake: make(chan struct{}, 1)}
	r.dirs[1] = &tunDir{name: "b→a", in: fb, out: fa, rng: rand.New(rand.NewPCG(seed, 1)), wake: make(chan struct{}, 1)}
	for _, d := range r.dirs {
		r.wg.Add(2)
		go r.read(d)
		go r.write(d)
	}
	t.Logf("user-space netem over tun %s/%s: delay %v ± %v, loss %g%%, reorder %g%%, queue %d packets, seed %#x (GATENET_NETEM_SEED replays another)",
		p.la, p.lb, tunDelay, tunJitter, tunLoss*100, tunReorder*100, tunQueueLimit, seed)
	t.Cleanup(func() {
		r.close()
		t.Logf("relay a→b: %v", r.dirs[0].stats())
		t.Logf("relay b→a: %v", r.dirs[1].stats())
		if err := r.error(); err != nil {
			t.Errorf("relay: %v", err)
		}
	})
	return r, nil
}

// cut makes the link a blackhole both ways, from now on.
func (r *tunRelay) cut() { r.blackhole.Store(true) }

// stats sums both directions.
func (r *tunRelay) stats() tunStats {
	a, b := r.dirs[0].stats(), r.dirs[1].stats()
	return tunStats{a.Relayed + b.Relayed, a.Lost + b.Lost, a.Overflow + b.Overflow, a.Reordered + b.Reordered, a.Cut + b.Cut}
}

func (r *tunRelay) fail(err error) {
	if r.stopping.Load() || r.blackhole.Load() {
		return // a closed descriptor or a deleted device: expected
	}
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
}

func (r *tunRelay) error() error {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	return r.err
}

// close stops both directions and closes the descriptors (which deletes
// the devices). Queued packets are dropped.
func (r *tunRelay) close() {
	if r.stopping.Swap(true) {
		return
	}
	close(r.done)
	for _, f := range r.files {
		f.Close() // unblocks the readers
	}
	r.wg.Wait()
}

// read takes packets off d.in and queues them, or drops them.
func (r *tunRelay) read(d *tunDir) {
	defer r.wg.Done()
	scratch := make([]byte, 64<<10)
	for {
		n, err := d.in.Read(scratch)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				r.fail(fmt.Errorf("%s: read: %w", d.name, err))
			}
			return
		}
		if r.blackhole.Load() {
			d.cut.Add(1)
			continue
		}
		if d.rng.Float64() < tunLoss {
			d.lost.Add(1)
			continue
		}
		reorder := d.rng.Float64() < tunReorder
		delay := tunDelay + time.Duration((d.rng.Float64()*2-1)*float64(tunJitter))
		now := time.Now()
		d.mu.Lock()
		if len(d.q) >= tunQueueLimit || n > tunMTU+64 {
			d.mu.Unlock()
			d.overflow.Add(1)
			continue
		}
		var release time.Time
		if reorder && d.lastFIFO.After(now) {
			// Released now: ahead of every in-order packet still queued.
			release = now
			d.reordered.Add(1)
		} else {
			release = now.Add(delay)
			if release.Before(d.lastFIFO) {
				release = d.lastFIFO // jitter does not reorder
			}
			d.lastFIFO = release
		}
		buf := r.bufs.Get().(*[tunMTU + 64]byte)
		d.seq++
		heap.Push(&d.q, &tunPacket{release: release, seq: d.seq, buf: append(buf[:0], scratch[:n]...)})
		d.mu.Unlock()
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// write releases d's queued packets to d.out when their time comes, with
// one timer re-armed for the earliest.
func (r *tunRelay) write(d *tunDir) {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var pkt *tunPacket
		wait := time.Duration(-1)
		d.mu.Lock()
		if len(d.q) > 0 {
			if w := time.Until(d.q[0].release); w <= 0 {
				pkt = heap.Pop(&d.q).(*tunPacket)
			} else {
				wait = w
			}
		}
		d.mu.Unlock()
		if pkt != nil {
			if r.blackhole.Load() {
				d.cut.Add(1)
			} else if _, err := d.out.Write(pkt.buf); err != nil {
				if !errors.Is(err, os.ErrClosed) {
					r.fail(fmt.Errorf("%s: write: %w", d.name, err))
				}
			} else {
				d.relayed.Add(1)
			}
			r.bufs.Put((*[tunMTU + 64]byte)(pkt.buf[:tunMTU+64]))
			continue
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-r.done:
			return
		case <-d.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}
