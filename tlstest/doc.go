// Package tlstest holds helpers for crypto/tls loopback tests over gatenet's
// sockets: an in-process certificate authority issuing ECDSA P-256 and RSA
// 2048 certificates, a connected and handshaken client/server *tls.Conn pair
// (Pair over TCP on 127.0.0.1, PairUnix over a Unix socket), and a TLS
// server running a handler per connection (NewServer).
//
// A test that needs a TLS connection asks for one and gets both ends:
//
//	func TestEcho(t *testing.T) {
//		c, s := tlstest.Pair(t, nil, nil) // closed when t ends
//		go io.Copy(s, s)
//		...
//	}
//
// Nil configurations take defaults issued by a CA shared by the test binary
// (DefaultCA): the server presents a certificate for "localhost",
// "127.0.0.1" and "::1", and the client trusts that CA.
//
// The listeners and dialers are gatenet's (gatenet.ListenConfig and
// gatenet.Dialer) on Linux. Elsewhere gatenet has no sockets, and the
// helpers fall back to package net, so tests using them still build and run.
//
// Only the certificate functions may be called outside a test: NewCA and
// the CA's methods (Certificate, Pool, CertPEM, ClientConfig, Leaf,
// ClientCert), MarshalPEM, DefaultCA, DefaultServerConfig and
// DefaultClientConfig. The helpers that take a testing.TB (Pair,
// PairFaults, PairUnix, NewServer, NewUnstartedServer) report setup
// failures with t.Fatalf, so call them from the test's goroutine; they
// release everything they made in t.Cleanup.
package tlstest
