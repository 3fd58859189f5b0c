//go:build linux

package httptest_test

// HTTP/1.1 over gatenet on both ends: many keep-alive requests with random
// bodies both ways, chunked responses flushed one chunk at a time, request
// and response bodies streamed at once (full duplex), and Expect:
// 100-continue.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// bodySize draws a size from 0 to 1 MiB: 0 and exactly 1 MiB each one time
// in twenty, otherwise log-uniform between 1 B and 1 MiB, so every order of
// magnitude is as frequent and the total stays moderate.
func bodySize(rng *rand.Rand) int {
	switch rng.IntN(20) {
	case 0:
		return 0
	case 1:
		return 1 << 20
	}
	return int(math.Exp2(rng.Float64() * 20))
}

// echoHashHandler reads the request body, answers its length and SHA-256
// in headers, and sends a random body of the size asked in X-Resp-Size
// with its SHA-256 in X-Resp-Sha256 — with a Content-Length, or chunked if
// X-Resp-Chunked is set.
func echoHashHandler(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	size, err := strconv.Atoi(r.Header.Get("X-Resp-Size"))
	if err != nil || size < 0 || size > 1<<20 {
		http.Error(w, "bad X-Resp-Size", http.StatusBadRequest)
		return
	}
	body := make([]byte, size)
	rand.NewChaCha8([32]byte{byte(size), byte(n)}).Read(body)
	w.Header().Set("X-Req-Len", strconv.FormatInt(n, 10))
	w.Header().Set("X-Req-TE", strings.Join(r.TransferEncoding, ","))
	w.Header().Set("X-Req-Sha256", hex.EncodeToString(h.Sum(nil)))
	w.Header().Set("X-Resp-Sha256", sha(body))
	if r.Header.Get("X-Resp-Chunked") == "" {
		w.Header().Set("Content-Length", strconv.Itoa(size))
	}
	w.Write(body)
}

// 2,000 keep-alive requests from 16 goroutines, random bodies up to 1 MiB
// each way, a quarter of the request bodies and of the responses chunked;
// every body verified by SHA-256 at the other end.
func TestKeepAliveRandomBodies(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(echoHashHandler), modeHTTP, nil)
	const workers, total = 16, 2000
	e.Transport().MaxIdleConnsPerHost = workers
	var next, bytesSent, bytesReceived atomic.Int64
	one := func(rng *rand.Rand) error {
		reqBody := make([]byte, bodySize(rng))
		rand.NewChaCha8([32]byte{byte(rng.Uint64())}).Read(reqBody)
		var body io.Reader = bytes.NewReader(reqBody)
		chunkedReq := rng.IntN(4) == 0
		if chunkedReq {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
		req, err := http.NewRequest(http.MethodPost, e.URL, body)
		if err != nil {
			return err
		}
		respSize := bodySize(rng)
		req.Header.Set("X-Resp-Size", strconv.Itoa(respSize))
		chunkedResp := rng.IntN(4) == 0
		if chunkedResp {
			req.Header.Set("X-Resp-Chunked", "1")
		}
		res, err := e.Client().Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		h := sha256.New()
		n, err := io.Copy(h, res.Body)
		switch {
		case err != nil:
			return err
		case res.StatusCode != http.StatusOK:
			return fmt.Errorf("status %s", res.Status)
		case chunkedReq && len(reqBody) > 0 && res.Header.Get("X-Req-TE") != "chunked",
			!chunkedReq && res.Header.Get("X-Req-TE") != "":
			return fmt.Errorf("request (chunked: %v) arrived with Transfer-Encoding %q", chunkedReq, res.Header.Get("X-Req-TE"))
		case res.Header.Get("X-Req-Len") != strconv.Itoa(len(reqBody)) || res.Header.Get("X-Req-Sha256") != sha(reqBody):
			return fmt.Errorf("request body of %d B arrived as %s B with a different hash", len(reqBody), res.Header.Get("X-Req-Len"))
		case n != int64(respSize) || hex.EncodeToString(h.Sum(nil)) != res.Header.Get("X-Resp-Sha256"):
			return fmt.Errorf("response body of %d B arrived as %d B or with a different hash", respSize, n)
		case !chunkedResp && res.ContentLength != int64(respSize),
			// Small enough, a response without a length gets one.
			chunkedResp && respSize > 4096 && res.ContentLength != -1:
			return fmt.Errorf("response (chunked: %v) of %d B has ContentLength %d", chunkedResp, respSize, res.ContentLength)
		}
		bytesSent.Add(int64(len(reqBody)))
		bytesReceived.Add(n)
		return nil
	}
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for next.Add(1) <= total {
				if err := one(rng); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		require.NoError(t, <-errc)
	}
	t.Logf("%d requests, %.1f MiB up, %.1f MiB down, %d connections dialed, %d accepted",
		total, float64(bytesSent.Load())/(1<<20), float64(bytesReceived.Load())/(1<<20), e.dials.Load(), e.accepted.Load())
	// Keep-alive: connections are reused (a few extra dials can race the
	// return of an idle connection, so no exact count).
	require.Less(t, e.dials.Load(), int64(total/10), "connections were not reused")
	require.Empty(t, e.Log.String())
}

// A chunked response flushed one chunk at a time: the client has each
// chunk before the handler writes the next (the handler waits for it).
func TestChunkedFlush(t *testing.T) {
	begin(t)
	const chunks = 50
	ack := make(chan struct{})
	e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for i := range chunks {
			fmt.Fprintf(w, "chunk %d\n", i)
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-ack:
			case <-r.Context().Done():
				return
			}
		}
	}), modeHTTP, nil)
	res, err := e.Client().Get(e.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, []string{"chunked"}, res.TransferEncoding)
	require.EqualValues(t, -1, res.ContentLength)
	br := bufio.NewReader(res.Body)
	for i := range chunks {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("chunk %d\n", i), line)
		ack <- struct{}{}
	}
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	require.Empty(t, rest)
}

// fullDuplex is a handler that sends its response while the request body
// is still arriving: upper-cased lines, one flush each, or the raw bytes
// for /copy.
func fullDuplex(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if err := rc.EnableFullDuplex(); err != nil {
		panic(err)
	}
	w.WriteHeader(http.StatusOK)
	rc.Flush()
	if r.URL.Path == "/copy" {
		io.Copy(w, r.Body)
		return
	}
	br := bufio.NewReader(r.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		io.WriteString(w, strings.ToUpper(line))
		rc.Flush()
	}
}

// Request and response bodies streamed at the same time: the request
// body is an io.Pipe the client writes one line at a time, each written
// only after the previous one's echo has arrived.
func TestStreamingPingPong(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(fullDuplex), modeHTTP, nil)
	pr, pw := io.Pipe()
	defer pw.Close()
	req, err := http.NewRequest(http.MethodPost, e.URL, pr)
	require.NoError(t, err)
	res, err := e.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	for i := range 100 {
		_, err := fmt.Fprintf(pw, "line %d\n", i)
		require.NoError(t, err)
		got, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("LINE %d\n", i), got)
	}
	require.NoError(t, pw.Close())
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	require.Empty(t, rest)
}

// 16 MiB streamed up through an io.Pipe and echoed down while it is still
// being sent; the echo is verified by SHA-256.
func TestStreamingBulkEcho(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(fullDuplex), modeHTTP, nil)
	data := randomBytes(t, 16<<20)
	pr, pw := io.Pipe()
	go func() {
		for off := 0; off < len(data); off += 100_000 {
			if _, err := pw.Write(data[off:min(off+100_000, len(data))]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	defer pw.Close()
	req, err := http.NewRequest(http.MethodPost, e.URL+"/copy", pr)
	require.NoError(t, err)
	res, err := e.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, res.Body)
	require.NoError(t, err)
	require.EqualValues(t, len(data), n)
	require.Equal(t, sha(data), hex.EncodeToString(h.Sum(nil)))
}

// trackedReader records whether the client sent the body at all.
type trackedReader struct {
	r    io.Reader
	read atomic.Bool
}

func (t *trackedReader) Read(p []byte) (int, error) {
	t.read.Store(true)
	return t.r.Read(p)
}

// Expect: 100-continue: a handler that reads the body gets it after the
// client has received "100 Continue"; one that refuses it answers without
// the client ever sending it. On the wire, the 100 comes before the body.
func TestExpectContinue(t *testing.T) {
	begin(t)
	e := start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/refuse" {
			w.WriteHeader(http.StatusExpectationFailed)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		io.WriteString(w, sha(b))
	}), modeHTTP, nil)
	// Wait for the server's answer as long as it takes: never send the
	// body on a timer.
	e.Transport().ExpectContinueTimeout = 1 << 62
	payload := randomBytes(t, 256<<10)

	for _, path := range []string{"/accept", "/refuse"} {
		var got100 atomic.Bool
		trace := &httptrace.ClientTrace{Got100Continue: func() { got100.Store(true) }}
		body := &trackedReader{r: bytes.NewReader(payload)}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPut, e.URL+path, body)
		require.NoError(t, err)
		req.ContentLength = int64(len(payload))
		req.Header.Set("Expect", "100-continue")
		res, err := e.Client().Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		if path == "/accept" {
			require.Equal(t, http.StatusOK, res.StatusCode)
			require.True(t, got100.Load(), "no 100 Continue")
			require.Equal(t, sha(payload), string(b))
		} else {
			require.Equal(t, http.StatusExpectationFailed, res.StatusCode)
			require.False(t, got100.Load(), "100 Continue for a refused body")
			require.False(t, body.read.Load(), "the refused body was sent")
		}
	}

	// The wire: headers, then "HTTP/1.1 100 Continue" before any body
	// byte is sent, then the body, then the final response.
	c := dialRaw(t, e.Addr())
	fmt.Fprintf(c, "PUT /accept HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 100 Continue\r\n", line)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "\r\n", line)
	io.WriteString(c, "hello")
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, sha([]byte("hello")), string(b))
}
