//go:build linux

// Command httpserver is an ordinary net/http program with the one-line
// swap: the listener comes from gatenet.Listen instead of net.Listen, and
// everything else — http.Serve, handlers, Shutdown — is unchanged. It serves,
// fetches one page from itself, prints it, and shuts down.
//
//	go run ./examples/httpserver
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gatenet/gatenet"
)

func main() {
	if err := run(); err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
}

func run() error {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s, from a gatenet listener\n", r.RemoteAddr)
	})

	ln, err := gatenet.Listen("tcp", "127.0.0.1:0") // the swap: was net.Listen
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	client := &http.Client{Timeout: 5 * time.Second}
	r, err := client.Get("http://" + ln.Addr().String() + "/hello")
	if err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return err
	}
	fmt.Printf("GET /hello: %s %s", r.Status, body)
	client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Println("server shut down")
	if r.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", r.Status)
	}
	return nil
}
