//go:build linux

package tlstest_test

// BenchmarkTLSHandshake: full TLS 1.3 handshakes (ECDSA P-256 certificate,
// X25519 key exchange, no resumption) over loopback TCP, package net and
// gatenet side by side in one run:
//
//	go test -run XXX -bench TLSHandshake -benchtime 2s -count 3 ./tlstest
//
// Each iteration dials a new connection, runs the client handshake against
// a server that handshakes every accepted connection in its own goroutine,
// reads one byte the server sends once its side is done (so both
// handshakes are inside the iteration), and closes. Crypto dominates; the
// target is gatenet ≥ 0.95 × net.

import (
	"context"
	"crypto/tls"
	"io"
	"sync"
	"testing"

	"github.com/gatenet/gatenet/tlstest"
)

func BenchmarkTLSHandshake(b *testing.B) {
	for _, st := range stacks {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			ln, err := st.listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			server := testCerts(b).serverConfig(tlstest.ECDSA)
			server.MinVersion = tls.VersionTLS13
			server.SessionTicketsDisabled = true
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					raw, err := ln.Accept()
					if err != nil {
						return
					}
					wg.Go(func() {
						defer raw.Close()
						s := tls.Server(raw, server)
						if s.Handshake() == nil {
							s.Write([]byte{1})
							s.Read(make([]byte, 1)) // until the client closes
						}
					})
				}
			})
			defer func() {
				ln.Close()
				wg.Wait()
			}()
			client := testCerts(b).clientConfig()
			addr := ln.Addr().String()
			one := make([]byte, 1)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				raw, err := st.dial(ctx, "tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				c := tls.Client(raw, client)
				if err := c.Handshake(); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, one); err != nil {
					b.Fatal(err)
				}
				raw.Close()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "handshakes/s")
		})
	}
}
