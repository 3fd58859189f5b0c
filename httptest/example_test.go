package httptest_test

import (
	"fmt"
	"io"
	"log"
	"net/http"

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

// A TLS test server: its Client trusts the server's certificate, which is
// generated in-process.
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
