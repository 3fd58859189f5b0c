//go:build linux

package httptest

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"sync"
)

// localhostCert is the test certificate every TLS server of the process
// presents: what net/http/internal/testcert embeds for net/http/httptest
// (a self-signed RSA 2048 CA for 127.0.0.1, ::1, example.com and
// *.example.com, from 1970 to 2084, for a client that offers only RSA
// suites too), plus the name localhost. Parsed on first use.
var localhostCert = sync.OnceValues(func() (tls.Certificate, error) {
	cert, err := tls.X509KeyPair(localhostCertPEM, []byte(testingKey(localhostKeyPEM)))
	if err != nil {
		return tls.Certificate{}, err
	}
	cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0])
	return cert, err
})

// testingKey turns the key's "TESTING KEY" blocks back into "PRIVATE KEY",
// as net/http/internal/testcert does, so that a scanner for leaked keys
// does not flag this test-only one.
func testingKey(s string) string { return strings.ReplaceAll(s, "TESTING KEY", "PRIVATE KEY") }

// Made with crypto/x509 from the template above (KeyUsage: digital
// signature, key encipherment, certificate signing; ExtKeyUsage: server
// auth; a CA).
var localhostCertPEM = []byte(`-----BEGIN CERTIFICATE-----
MIIDUzCCAjugAwIBAgIQRnajiIDejELCrQoR4e1V7zANBgkqhkiG9w0BAQsFADAS
MRAwDgYDVQQKEwdBY21lIENvMCAXDTcwMDEwMTAwMDAwMFoYDzIwODQwMTI5MTYw
MDAwWjASMRAwDgYDVQQKEwdBY21lIENvMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A
MIIBCgKCAQEA8A29+5oAdsepcaXyppMSVlONBMfKd3DnEJwsEBKA2QxFTob9np13
j0CQaL0iCnHWHp9ej0SNY8ovlVEozHgdvfl/gWG1nfYl8jJC2klu/am67AdEb0tU
XelnYgwjO2rPlkFRvFVyo6flLVcyQIt3NurS58xmb4vcDidZRl8OhMUZ+PRVNZuz
21daUt6derGKHM3Dlv7A2YWNVdFebf1GxfOPY/VgmdQRG2PQDo+3ci6QVgSUZ2Ix
Tup8xC9Ie39rsrxEwFgulLWRH+egQzTJiPQbeHKnpGcxcYwRQeyHJW/cs79ndVYl
LEuCVr6wE8tF6zz980/fWIlQHi72VG+jSwIDAQABo4GiMIGfMA4GA1UdDwEB/wQE
AwICpDATBgNVHSUEDDAKBggrBgEFBQcDATAPBgNVHRMBAf8EBTADAQH/MB0GA1Ud
DgQWBBSnY2u7KHOnqLOVIT0UG8T5qs1t4jBIBgNVHREEQTA/gglsb2NhbGhvc3SC
C2V4YW1wbGUuY29tgg0qLmV4YW1wbGUuY29thwR/AAABhxAAAAAAAAAAAAAAAAAA
AAABMA0GCSqGSIb3DQEBCwUAA4IBAQBGWJpgBgwajBkCY99pQOXzA01cj357gGt+
wXZVGSkPVEU4o19UgXBWzUwLneqaTBKfKaQep/2HVEw3VzmkTYEjbGwwH4DcfG15
h8LlLeFguypZBCVZ9lxSSiAS7Z5pbVONwlQ89sFHSGGycXeT7LkSF3IySiBgYdk8
T3XNQnfUWBjqIiVZOnXJWwuaSP/FBSMs3cSae0J/vlPzMKfRewPEgKg8IAgZHP5+
j+9Yn2+uxZteEzNuGGKILa+UmbAuxI1zClsIXmLH9qIOGr9m3UDtQEbPxQY20k6d
xbGJFXGnUxRb7uyUhM3C7Er60Z9IqUwUjouaEpn2WVjWckePhiGw
-----END CERTIFICATE-----
`)

var localhostKeyPEM = `-----BEGIN TESTING KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDwDb37mgB2x6lx
pfKmkxJWU40Ex8p3cOcQnCwQEoDZDEVOhv2enXePQJBovSIKcdYen16PRI1jyi+V
USjMeB29+X+BYbWd9iXyMkLaSW79qbrsB0RvS1Rd6WdiDCM7as+WQVG8VXKjp+Ut
VzJAi3c26tLnzGZvi9wOJ1lGXw6ExRn49FU1m7PbV1pS3p16sYoczcOW/sDZhY1V
0V5t/UbF849j9WCZ1BEbY9AOj7dyLpBWBJRnYjFO6nzEL0h7f2uyvETAWC6UtZEf
56BDNMmI9Bt4cqekZzFxjBFB7Iclb9yzv2d1ViUsS4JWvrATy0XrPP3zT99YiVAe
LvZUb6NLAgMBAAECggEAOxk/AP7Ih3WfTyXqR70kghE+wgMH4wDuOgYgyPItO4JM
W8lbDh45TZC5HLgXddfRvadBqebYIk2oCkw5TaFyvQ78J5etFU8Ax5A9Ki1zAEs1
hB9D51x10EsCkz5mvB2PLrA1Fbc5qnXOs6toaUCMoH4OX1fQjjyx9+ATGAKV+fRs
X8hld4lf4q+jhyYFeKGyRPoJoQOetdFPazue8d3awUzTM/RYqvAB5qmTjcuPJO8z
LFt5bh83at9tYKaTW9b9HeTNho7O62rL+Go1Gvawfzg7qXXp7yMTaHI5/mJoJqCK
Atv0tk86K1zUTsq/Uz0RCjfTnl3pZg844kGdAprR6QKBgQD6QcQehNazNask3a3l
fyTzws3hK1ybMO3HykrNwSHzwAvdgiqCyQiH+ZEfEcFUgHwiHnEFrw538CPnO7dA
rx41CZ2j16NpR+oD4n7oH2rPh6bJf3KB5DZ+BysCR7j8u8x3k1g25NANAytLntAr
vqcihYSkRVyrtp3ovZdOGWzgcwKBgQD1kAh80nDnGdb7WYKcwtC+c6KYUId81K2N
gujQ/aMLIQMMgfkfqFcf9SCJmcXb8W4DD5slJmIvl0uK3I4FfbkvytBN452XBXqq
XBWX/86F4vw2QCc6hvukY7aIb0A/0LBfKY8Dh+a48ZGiMnHoFAzRXs3sb0rQHhT1
myXx3TGzyQKBgG/00g8xMHfV7627eptsCRUANmigpHpNJmM2DccEuvK4HNbI78m4
tBdYv+KdZ9cs79u3sKpxSVDA3t8IqQ/ICASEO8DbrKBh6sA4KLwhqgAT2LrWSFzx
wqsY+9W2TnzKa0unYFSWgrj/jPP0pX6ceVsJTnDLEw1C0lwXzUPEPiAfAoGBAN7x
QYNx26c1QoU4ouiHxtTiT0BR/HBM9rR/obf8TsaP1iDI79DaGR+egUfsIEKrUuHc
jVKRIptqlN8hlp9NoY/OZogQmsa95rw8li5FxM6xYaIvZG4ylsyM6u+7cW1+nmIH
bRwbilFmoH3NprS5X1nG5NY/xIBmj0jc7vpDhBhhAoGBAKCrJ6nPVz8Kre85/hQf
BJijRAFtdw+Pfx7d6tKmogZJN3JVTENL6BANHpobJm9BYXQj2oL1XlFVB9LYSX7u
RiHVPu5tiw1EX7MO9LAa6TsijqBO6eLeJgroUJOFrdfRN5F+kTGaEIiva3CkXqh/
BuX3IP2rLZLFhSb2jmaaTujj
-----END TESTING KEY-----
`
