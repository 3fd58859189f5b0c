//go:build linux

package pollfd_test

import (
	"fmt"
	"log"

	"golang.org/x/sys/unix"

	"github.com/gatenet/gatenet/pollfd"
)

// A read in the style of internal/poll: Prepare, try the syscall, and on
// EAGAIN wait for the descriptor to become readable, then try again.
func ExampleDesc_Wait() {
	p, err := pollfd.New(pollfd.DefaultOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		log.Fatal(err)
	}
	r, w := fds[0], fds[1]
	defer unix.Close(w)
	defer unix.Close(r) // after the Desc is closed: deferred calls run in reverse

	d, err := p.Open(r)
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		d.Unblock() // wake any waiter with ErrClosing: Close requires it
		if err := d.Close(); err != nil {
			log.Fatal(err)
		}
	}()

	if err := d.Prepare(pollfd.ModeRead); err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, 64)
	_, err = unix.Read(r, buf)
	fmt.Println("before the write:", err == unix.EAGAIN)

	go unix.Write(w, []byte("hello, poller"))

	for {
		n, err := unix.Read(r, buf)
		if err == unix.EAGAIN {
			if err := d.Wait(pollfd.ModeRead); err != nil {
				log.Fatal(err)
			}
			continue
		}
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("read %q\n", buf[:n])
		break
	}
	// Output:
	// before the write: true
	// read "hello, poller"
}

// Stats are a poller's counters: what is registered now, and what the
// drain loop and the waiters have done so far (events, parks, wake-ups by
// cause). gatenet's own descriptors are on pollfd.Default().
func ExamplePoller_Stats() {
	p, err := pollfd.New(pollfd.DefaultOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	// An eventfd: readable while its counter is not zero.
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		log.Fatal(err)
	}
	defer unix.Close(efd)
	d, err := p.Open(efd)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("registered:", p.Stats().Registered)

	// One readiness edge: the read finds nothing, a write makes it
	// readable, and the wait returns once the event has been delivered.
	var counter [8]byte
	if err := d.Prepare(pollfd.ModeRead); err != nil {
		log.Fatal(err)
	}
	if _, err := unix.Read(efd, counter[:]); err != unix.EAGAIN {
		log.Fatal(err)
	}
	counter[0] = 1
	unix.Write(efd, counter[:])
	if err := d.Wait(pollfd.ModeRead); err != nil {
		log.Fatal(err)
	}
	fmt.Println("events delivered:", p.Stats().Events > 0)

	d.Unblock()
	if err := d.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("registered after Close:", p.Stats().Registered)
	// Output:
	// registered: 1
	// events delivered: true
	// registered after Close: 0
}
