// Package httptest is net/http/httptest on gatenet: a Server for end-to-end
// HTTP tests whose listener is a gatenet TCP listener and whose Client dials
// through a gatenet.Dialer, so both ends of every connection run on
// gatenet's poller while net/http and crypto/tls run unchanged.
//
// It has net/http/httptest's API and semantics — NewServer, NewTLSServer,
// NewUnstartedServer, Go 1.27's NewTestServer (with Go 1.26 too), Start,
// StartTLS, EnableHTTP2, Close (which waits for
// outstanding requests), CloseClientConnections, Client, Certificate, URL
// of the form "http://127.0.0.1:port", and the -httptest.serve flag — and
// re-exports its ResponseRecorder, NewRecorder, NewRequest,
// NewRequestWithContext and DefaultRemoteAddr, so an existing test switches
// by changing one import:
//
//	import "github.com/gatenet/gatenet/httptest" // was "net/http/httptest"
//
// Differences from net/http/httptest:
//
//   - Server.Listener is a *gatenet.TCPListener (wrapped by crypto/tls's
//     listener after StartTLS), and the connections the server accepts
//     and the Client dials are *gatenet.TCPConn.
//   - NewTestServer serves on two gatenet loopback listeners (HTTP and
//     HTTPS), which its Client dials whatever a request's host, where
//     net/http/httptest's serves on an in-memory network; Listener stays
//     unset, as there. Both work in testing/synctest bubbles.
//   - The TLS certificate is an embedded self-signed RSA 2048 CA like
//     httptest's, valid for 127.0.0.1, ::1, example.com and *.example.com
//     until 2084, and for localhost too; Server.Certificate returns it.
//
// Off Linux, where gatenet delegates to the standard library, Server is
// net/http/httptest.Server itself (a type alias) and the constructors are
// httptest's: code using this package builds everywhere.
package httptest
