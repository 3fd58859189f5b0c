package tlstest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// KeyKind is the kind of key a certificate is issued for.
type KeyKind int

const (
	// ECDSA is an ECDSA key on P-256.
	ECDSA KeyKind = iota
	// RSA is a 2048-bit RSA key. Generating one takes tens to hundreds of
	// milliseconds (more under -race): issue RSA certificates once per test
	// binary, not once per test.
	RSA
)

// String returns "ECDSA" or "RSA".
func (k KeyKind) String() string {
	switch k {
	case ECDSA:
		return "ECDSA"
	case RSA:
		return "RSA"
	}
	return fmt.Sprintf("KeyKind(%d)", int(k))
}

func (k KeyKind) generate() (crypto.Signer, error) {
	switch k {
	case ECDSA:
		return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case RSA:
		return rsa.GenerateKey(rand.Reader, 2048)
	}
	return nil, fmt.Errorf("tlstest: unknown key kind %v", k)
}

// Validity of what a CA issues: backdated by an hour against clock skew
// between the test and a peer such as openssl.
const (
	backdate     = time.Hour
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
)

// CA is a self-signed certificate authority (ECDSA P-256) made in-process.
// Its methods may be called concurrently.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA generates a new CA with an ECDSA P-256 key.
func NewCA() (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlstest: generating the CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"gatenet tlstest"}, CommonName: "tlstest CA " + serial.Text(16)[:8]},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("tlstest: self-signing the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tlstest: parsing the CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key}, nil
}

// Certificate returns the CA's certificate. Do not modify it.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// Pool returns a new pool holding the CA's certificate, for
// tls.Config.RootCAs (clients) or ClientCAs (servers verifying clients).
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// CertPEM returns the CA's certificate PEM-encoded, as tools such as
// openssl's -CAfile want it.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// ClientConfig returns a client configuration that trusts the CA. Set its
// ServerName (or let Pair and Server.DialContext fill it in).
func (ca *CA) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: ca.Pool()}
}

// Leaf issues a server certificate (ExtKeyUsageServerAuth) for names, each
// a DNS name ("localhost", "a.example", "*.example") or an IP address
// ("127.0.0.1", "::1"), with a new key of the given kind. The first name is
// also the subject's common name. With no names the certificate is for
// "localhost", "127.0.0.1" and "::1".
//
// The chain in the returned certificate is the leaf alone; peers are
// expected to trust the CA (Pool). Leaf is set.
func (ca *CA) Leaf(kind KeyKind, names ...string) (tls.Certificate, error) {
	if len(names) == 0 {
		names = []string{"localhost", "127.0.0.1", "::1"}
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"gatenet tlstest"}, CommonName: names[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if kind == RSA {
		// RSA key exchange (TLS 1.2, off by default in Go, offered by
		// some peers) needs it.
		tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
	}
	for _, n := range names {
		if n == "" {
			return tls.Certificate{}, errors.New("tlstest: empty name")
		}
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	return ca.issue(kind, tmpl)
}

// ClientCert issues a client certificate (ExtKeyUsageClientAuth) for
// mutual TLS, with commonName as its subject's common name and a new key of
// the given kind. A server verifies it with ClientCAs set to the CA's Pool
// and ClientAuth set to tls.RequireAndVerifyClientCert.
func (ca *CA) ClientCert(kind KeyKind, commonName string) (tls.Certificate, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{Organization: []string{"gatenet tlstest"}, CommonName: commonName},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return ca.issue(kind, tmpl)
}

// issue completes tmpl (serial, validity) and signs it for a new key.
func (ca *CA) issue(kind KeyKind, tmpl *x509.Certificate) (tls.Certificate, error) {
	key, err := kind.generate()
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlstest: generating a %v key: %w", kind, err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = now.Add(leafLifetime)
	if tmpl.NotAfter.After(ca.cert.NotAfter) {
		tmpl.NotAfter = ca.cert.NotAfter
	}
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlstest: signing a certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlstest: parsing the certificate for %q: %w", tmpl.Subject.CommonName, err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// newSerial is a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tlstest: generating a serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// MarshalPEM encodes cert's chain as PEM certificates and its private key
// as a PEM "PRIVATE KEY" (PKCS #8), the files openssl's -cert and -key
// options read.
func MarshalPEM(cert tls.Certificate) (certPEM, keyPEM []byte, err error) {
	if len(cert.Certificate) == 0 {
		return nil, nil, errors.New("tlstest: MarshalPEM: the certificate has no chain")
	}
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tlstest: MarshalPEM: %w", err)
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// The defaults nil configurations take: one CA per process and one ECDSA
// leaf for localhost, 127.0.0.1 and ::1. Both are immutable once made, so
// sharing them between tests is safe.
var defaults = sync.OnceValue(func() *struct {
	ca   *CA
	leaf tls.Certificate
} {
	ca, err := NewCA()
	if err != nil {
		panic(err) // crypto/rand does not fail; nothing else here can
	}
	leaf, err := ca.Leaf(ECDSA)
	if err != nil {
		panic(err)
	}
	return &struct {
		ca   *CA
		leaf tls.Certificate
	}{ca, leaf}
})

// DefaultCA returns the CA shared by every user of this package in the
// process, made on first use. It issued the certificate of the default
// server configuration.
func DefaultCA() *CA { return defaults().ca }

// DefaultServerConfig returns a new copy of the configuration a nil server
// configuration stands for: an ECDSA certificate from DefaultCA for
// "localhost", "127.0.0.1" and "::1" (the certificate is shared).
func DefaultServerConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{defaults().leaf}}
}

// DefaultClientConfig returns a new copy of the configuration a nil client
// configuration stands for: it trusts DefaultCA. Its ServerName is empty;
// Pair, PairUnix and Server.DialContext fill it in.
func DefaultClientConfig() *tls.Config { return DefaultCA().ClientConfig() }
