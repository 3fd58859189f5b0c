package httptest_test

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/gatenet/gatenet"
	"github.com/gatenet/gatenet/httptest"
)

// A test server on a gatenet listener; its Client dials through gatenet.
// Swapping net/http/httptest for this package is a change of import.
func ExampleNewServer() {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "Hello, client")
	}))
	defer ts.Close()

	res, err := ts.Client().Get(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	greeting, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s", res.Proto, greeting)
	// Output: HTTP/1.1 Hello, client
}

// A TLS test server: its Client trusts the server's certificate, the
// package's embedded test certificate.
func ExampleNewTLSServer() {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "Hello, client")
	}))
	defer ts.Close()

	res, err := ts.Client().Get(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	greeting, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %v %s", res.Proto, ts.Certificate().VerifyHostname("127.0.0.1") == nil, greeting)
	// Output: HTTP/1.1 true Hello, client
}

// HTTP/2 over TLS: set EnableHTTP2 between NewUnstartedServer and
// StartTLS.
func ExampleServer_EnableHTTP2() {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "Hello, %s client\n", r.Proto)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()

	res, err := ts.Client().Get(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	greeting, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s", res.TLS.NegotiatedProtocol, greeting)
	// Output: h2 Hello, HTTP/2.0 client
}

// NewUnstartedServer, to configure the http.Server before Start. The
// connections the server accepts are gatenet's: a ConnState hook can hand
// them to gatenet.InjectFaults or a ReadyQueue (on Linux they are
// *gatenet.TCPConn).
func ExampleNewUnstartedServer() {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "Hello, client")
	}))
	pollable := make(chan bool, 1)
	ts.Config.ReadHeaderTimeout = 10 * time.Second
	ts.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			_, ok := c.(gatenet.Pollable)
			select {
			case pollable <- ok:
			default:
			}
		}
	}
	ts.Start()
	defer ts.Close()

	res, err := ts.Client().Get(ts.URL)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.Status)
	fmt.Println("the server's conn is a gatenet.Pollable:", <-pollable)
	// Output:
	// 200 OK
	// the server's conn is a gatenet.Pollable: true
}
