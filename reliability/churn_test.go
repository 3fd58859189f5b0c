//go:build linux

package reliability_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/internal/testutil"
)

// TestChurn opens and closes many gatenet TCP connections, a few dozen at a
// time, each carrying random data that the far side verifies by SHA-256
// (the server echoes the digest of what it received). Afterwards the open
// descriptors and goroutines are back to their baseline.
func TestChurn(t *testing.T) {
	testutil.CheckLeaks(t)
	// The soak moves 5 GB under -race: about 160 s on an idle 2-core
	// machine, and more beside other work; the watchdog is for hangs.
	testutil.Watchdog(t, time.Duration(pick(3, 10))*time.Minute)
	conns := pick(500, 5000)
	size := pick(64<<10, 1<<20)
	const parallel = 32

	ln, err := gatenet.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	var srv sync.WaitGroup
	srv.Add(1)
	go func() {
		defer srv.Done()
		var conns sync.WaitGroup
		defer conns.Wait()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(time.Minute))
				h := sha256.New()
				if _, err := io.Copy(h, c); err != nil {
					t.Errorf("server read: %v", err)
					return
				}
				if _, err := c.Write(h.Sum(nil)); err != nil {
					t.Errorf("server write digest: %v", err)
				}
			}()
		}
	}()

	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var failures sync.Map
	start := time.Now()
	for i := 0; i < conns && !t.Failed(); i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := churnOne(ln.Addr().String(), size); err != nil {
				failures.Store(i, err)
				t.Errorf("connection %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	require.NoError(t, ln.Close())
	srv.Wait()
	t.Logf("%d connections x %d bytes in %v", conns, size, time.Since(start))
}

func churnOne(addr string, size int) error {
	c, err := gatenet.Dial("tcp4", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	data := make([]byte, size)
	rand.Read(data)
	want := sha256.Sum256(data)
	// Write from a second goroutine so a big payload cannot deadlock
	// against a full receive buffer on the digest side (it cannot here,
	// but keep the shape of a real client).
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		if err == nil {
			err = c.(*gatenet.TCPConn).CloseWrite()
		}
		werr <- err
	}()
	got, err := io.ReadAll(c)
	if e := <-werr; e != nil {
		return e
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want[:]) {
		return &digestError{got: got}
	}
	return nil
}

type digestError struct{ got []byte }

func (e *digestError) Error() string {
	return "server digest mismatch: data lost or corrupted (got " + net.IP(e.got).String() + ")"
}
