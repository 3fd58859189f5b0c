//go:build linux

package main

// TLS 1.3 handshakes over the contender's loopback TCP.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/gatenet/gatenet/internal/benchharness"
)

const tlsServerName = "gatebench.test"

// tlsConfigs makes a self-signed ECDSA P-256 certificate, in memory, and
// the server and client configurations that use it: TLS 1.3 only, no
// session tickets (every handshake is a full one).
func tlsConfigs() (server, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: tlsServerName},
		DNSNames:              []string{tlsServerName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{
		Certificates:           []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}},
		MinVersion:             tls.VersionTLS13,
		SessionTicketsDisabled: true,
	}
	client = &tls.Config{RootCAs: pool, ServerName: tlsServerName, MinVersion: tls.VersionTLS13}
	return server, client, nil
}

// tlsHandshakes: clients goroutines each dial, handshake, read one byte
// the server writes once its side of the handshake is done (so both
// sides' work is inside the operation) and close; the server handshakes
// each accepted connection in a goroutine of its own.
func tlsHandshakes(s benchharness.Stack, clients int, duration time.Duration) (result, error) {
	serverCfg, clientCfg, err := tlsConfigs()
	if err != nil {
		return result{}, err
	}
	ln, err := s.Listen()
	if err != nil {
		return result{}, err
	}
	var (
		conns     sync.WaitGroup
		errMu     sync.Mutex
		serverErr error
	)
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			raw, err := ln.Accept()
			if err != nil {
				return // the listener closed
			}
			conns.Go(func() {
				defer raw.Close()
				c := tls.Server(raw, serverCfg)
				err := c.Handshake()
				if err == nil {
					_, err = c.Write([]byte{1})
				}
				if err == nil {
					_, err = c.Read(make([]byte, 1)) // until the client closes
					if err == io.EOF || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
						err = nil
					}
				}
				if err != nil {
					errMu.Lock()
					serverErr = errors.Join(serverErr, err)
					errMu.Unlock()
				}
			})
		}
	}()
	addr := ln.Addr().String()
	handshake := func(int) error {
		raw, err := s.DialTCP(addr)
		if err != nil {
			return err
		}
		c := tls.Client(raw, clientCfg)
		err = c.Handshake()
		if err == nil {
			var one [1]byte
			_, err = io.ReadFull(c, one[:])
		}
		return errors.Join(err, raw.Close())
	}
	run, loopErr := benchharness.RunConcurrent(clients, 5, duration, handshake)
	closeErr := ln.Close()
	<-accepted
	conns.Wait()
	if err := errors.Join(loopErr, closeErr, serverErr); err != nil {
		return result{}, fmt.Errorf("tls: %w", err)
	}
	return run.Result(), nil
}
