package http1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Answers as real servers send them (Go's net/http, nginx, Python's http.server), and how drainit
// reads each.
func TestReadResponse(t *testing.T) {
	cases := []struct {
		name, in string
		head     bool
		status   int
		body     string
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\nConnection: close\r\n\r\nready\n", false, 200, "ready\n"},
		{"chunked with a trailer", "HTTP/1.1 503 Service Unavailable\r\nTrailer: X-Drain-Status\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\na\r\ndraining: \r\na\r\ntry later\n\r\n0\r\nX-Drain-Status: busy\r\n\r\n", false, 503, "draining: try later\n"},
		{"chunk extensions, upper-case hex", "HTTP/1.1 500 x\r\nTransfer-Encoding: chunked\r\n\r\nA ; name=\"v\"\r\n0123456789\r\n0\r\n\r\n", false, 500, "0123456789"},
		{"transfer-encoding overrides content-length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", false, 200, "hello"},
		{"other codings are kept as they came", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nabc", false, 200, "abc"},
		{"a malformed chunk keeps what came before", "HTTP/1.1 502 x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\nlost", false, 502, "abc"},
		{"204", "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", false, 204, ""},
		{"304 with a length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n", false, 304, ""},
		{"HEAD", "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nContent-Length: 12\r\n\r\n", true, 200, ""},
		{"103 Early Hints first", "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false, 200, "ok"},
		{"100 Continue unasked", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n", false, 201, ""},
		{"HTTP/1.0, close-delimited", "HTTP/1.0 200 OK\r\nServer: BaseHTTP/0.6 Python/3.11.7\r\nContent-Type: text/plain\r\n\r\ndrained 3 connections\n", false, 200, "drained 3 connections\n"},
		{"no reason phrase, bare LF", "HTTP/1.1 404\n\nnope", false, 404, "nope"},
		{"body shorter than its length", "HTTP/1.1 500 x\r\nContent-Length: 10\r\n\r\nabc", false, 500, "abc"},
	}
	for _, c := range cases {
		method := "GET"
		if c.head {
			method = "HEAD"
		}
		res, err := readResponse(bufio.NewReaderSize(strings.NewReader(c.in), 4096), method, false)
		if err != nil || res.Status != c.status || string(res.Body) != c.body {
			t.Errorf("%s: %d %q, %v; want %d %q", c.name, res.Status, res.Body, err, c.status, c.body)
		}
	}
	for _, bad := range []string{
		"", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n", // cut in the head
		"HTTP/1.1 +200 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 099 x\r\n\r\n", "HTTP/1.1 20 x\r\n\r\n",
		"HTTP/2 200\r\n\r\n", "HTTP/1. 200 OK\r\n\r\n", "HTTP/1.x 200 OK\r\n\r\n", "ICY 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n", "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
		strings.Repeat("HTTP/1.1 100 Continue\r\n\r\n", maxInterim+1) + "HTTP/1.1 200 OK\r\n\r\n",
	} {
		if res, err := readResponse(bufio.NewReaderSize(strings.NewReader(bad), 4096), "GET", false); err == nil {
			t.Errorf("%.60q read as %d %q", bad, res.Status, res.Body)
		}
	}
}

// Through a real connection to net/http: a hook's error shows the body a server sent, not its
// chunk framing, and a HEAD's answer has no body whatever its Content-Length says.
func TestClientChunkedAndHead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/drain" { // chunked, as net/http sends a flushed answer, with a trailer
			w.Header().Set("Trailer", "X-Drain-Status")
			w.WriteHeader(503)
			fmt.Fprint(w, "draining: ")
			w.(http.Flusher).Flush()
			fmt.Fprint(w, "try later")
			w.Header().Set("X-Drain-Status", "busy")
			return
		}
		w.Header().Set("Content-Length", "12")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := Do(ctx, Call{URL: srv.URL + "/drain"}); err != nil || r.Status != 503 || string(r.Body) != "draining: try later" {
		t.Errorf("chunked: %v %d %q", err, r.Status, r.Body)
	}
	if r, err := Do(ctx, Call{Method: "HEAD", URL: srv.URL + "/"}); err != nil || r.Status != 200 || len(r.Body) != 0 {
		t.Errorf("HEAD: %v %d, %d bytes of body", err, r.Status, len(r.Body))
	}
}

// endless reads a prefix, then repeats unit, up to a hard cap so that a reader that never stops
// fails the test instead of hanging it.
type endless struct {
	prefix, unit []byte
	n            int // bytes read
}

const endlessCap = 64 << 20

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= endlessCap {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && e.n < endlessCap {
		var c byte
		if e.n < len(e.prefix) {
			c = e.prefix[e.n]
		} else {
			c = e.unit[(e.n-len(e.prefix))%len(e.unit)]
		}
		p[k] = c
		k++
		e.n++
	}
	return k, nil
}

// A broken or hostile hook endpoint that never stops sending (headers, interim answers, body,
// chunk framing) makes drainit read a bounded amount, keep at most MaxBodyBytes and allocate
// a bounded amount, well before the call's deadline matters.
func TestReadResponseBounded(t *testing.T) {
	const chunkedHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	cases := []struct {
		name         string
		prefix, unit string
		err          error // nil: a status is read, with a body of MaxBodyBytes when long is set
		long         bool
		maxRead      int
	}{
		{"endless status line", "HTTP/1.1 200 ", "a", ErrHeaderTooLarge, false, MaxHeaderBytes + 4096},
		{"endless header fields", "HTTP/1.1 200 OK\r\n", "X-A: b\r\n", nil, false, MaxHeaderBytes + 4096},
		{"endless header fields of an interim answer", "HTTP/1.1 100 Continue\r\n", "X-A: b\r\n", ErrHeaderTooLarge, false, MaxHeaderBytes + 4096},
		{"endless interim answers", "", "HTTP/1.1 100 Continue\r\n\r\n", ErrMalformed, false, 4096},
		{"endless body, no length", "HTTP/1.0 200 OK\r\n\r\n", "x", nil, true, MaxBodyBytes + 4096},
		{"endless body, huge length", "HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n", "x", nil, true, MaxBodyBytes + 4096},
		{"endless one-byte chunks", chunkedHead, "1\r\nx\r\n", nil, true, 6*MaxBodyBytes + 4096},
		{"one endless chunk", chunkedHead + "7fffffffffffffff\r\n", "x", nil, true, MaxBodyBytes + 4096},
		{"endless chunk size line", chunkedHead, "1", nil, false, 4096 + 4096},
		{"endless chunk extensions", chunkedHead, "1;" + strings.Repeat("e", 4000) + "\r\nx\r\n", nil, false, maxChunkOverhead + 4*4096},
		{"endless empty lines after a chunk", chunkedHead + "1\r\nx", "\r\n", nil, false, 2 * 4096},
	}
	for _, c := range cases {
		src := &endless{prefix: []byte(c.prefix), unit: []byte(c.unit)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := readResponse(bufio.NewReaderSize(src, 4096), "GET", false)
		runtime.ReadMemStats(&after)
		if c.err != nil && !errors.Is(err, c.err) || c.err == nil && (err != nil || res.Status != 200) {
			t.Errorf("%s: %d, %v; want error %v", c.name, res.Status, err, c.err)
		}
		if len(res.Body) > MaxBodyBytes || c.long && len(res.Body) != MaxBodyBytes {
			t.Errorf("%s: kept %d bytes of body", c.name, len(res.Body))
		}
		if src.n > c.maxRead {
			t.Errorf("%s: read %d bytes, want at most %d", c.name, src.n, c.maxRead)
		}
		// The reader's buffer, the header map and the body's growth: a few times MaxBodyBytes.
		if got := after.TotalAlloc - before.TotalAlloc; got > 8*MaxBodyBytes {
			t.Errorf("%s: allocated %d bytes", c.name, got)
		}
	}
}

// With successHeadOnly, a 2xx answer's endless body is not read at all (one buffer's worth at
// most: what came with the head), while a failure's body still is, up to MaxBodyBytes.
func TestReadResponseSuccessHeadOnly(t *testing.T) {
	for head, wantBody := range map[string]int{
		"HTTP/1.1 200 OK\r\nContent-Length: 4611686018427387904\r\n\r\n": 0,
		"HTTP/1.1 204 No Content\r\n\r\n":                                0,
		"HTTP/1.1 503 Service Unavailable\r\n\r\n":                       MaxBodyBytes,
		"HTTP/1.1 302 Found\r\nLocation: http://elsewhere/\r\n\r\n":      MaxBodyBytes,
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n\r\n":      0,
	} {
		src := &endless{prefix: []byte(head), unit: []byte("x")}
		res, err := readResponse(bufio.NewReaderSize(src, 4096), "GET", true)
		if err != nil || len(res.Body) != wantBody {
			t.Errorf("%q: %d with %d bytes of body, %v; want %d bytes", head, res.Status, len(res.Body), err, wantBody)
		}
		if wantBody == 0 && src.n > 4096 {
			t.Errorf("%q: read %d bytes, want no more than one buffer", head, src.n)
		}
	}
}

// A final answer with more than MaxHeaderBytes of header fields (a service behind a gateway that
// adds cookies and security policies) is its status: a success is one, and a failure says its
// status; the body, framed by fields left unread, is not read. An interim answer that large
// leaves no way to find the next one.
func TestReadResponseFieldsTooLarge(t *testing.T) {
	fields := strings.Repeat("Set-Cookie: c="+strings.Repeat("v", 500)+"\r\n", 20) // 10 KiB
	for _, c := range []struct {
		answer string
		status int
		err    error
	}{
		{"HTTP/1.1 200 OK\r\n" + fields + "Content-Length: 2\r\n\r\nok", 200, nil},
		{"HTTP/1.1 503 Service Unavailable\r\n" + fields + "\r\ndown", 503, nil},
		{"HTTP/1.1 100 Continue\r\n" + fields + "\r\nHTTP/1.1 200 OK\r\n\r\n", 0, ErrHeaderTooLarge},
		{"HTTP/1.1 200 OK\r\n" + fields[:MaxHeaderBytes-100] + "\r\n\r\n", 200, nil},
	} {
		for _, headOnly := range []bool{false, true} {
			res, err := readResponse(bufio.NewReaderSize(strings.NewReader(c.answer), 4096), "GET", headOnly)
			tooLarge := len(c.answer) > MaxHeaderBytes
			if !errors.Is(err, c.err) || res.Status != c.status || c.err == nil && res.FieldsTooLarge != tooLarge {
				t.Errorf("%.40q…: %d, fields too large %v, %v; want %d, %v, %v", c.answer, res.Status, res.FieldsTooLarge, err, c.status, tooLarge, c.err)
			}
			if res.FieldsTooLarge && res.Body != nil {
				t.Errorf("%.40q…: body %q read after fields left unread", c.answer, res.Body)
			}
		}
	}
}

// FuzzReadResponse feeds arbitrary bytes to the client as a server's answer to a GET or a HEAD.
// Nothing may panic; a failure is ErrMalformed, ErrHeaderTooLarge or the answer cut short; an
// answer read has a final status (101, or 200 to 999), at most MaxBodyBytes of body taken from
// the input, none for HEAD, 204 or 304. And where net/http reads the same bytes as a final answer
// with a whole body, drainit reads the same status and body. Seeds live in
// testdata/fuzz/FuzzReadResponse/ (answers captured from Go's net/http, nginx and Python's
// http.server, and malformed ones).
func FuzzReadResponse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		res, err := readResponse(bufio.NewReaderSize(bytes.NewReader(data), 4096), method, false)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrHeaderTooLarge) && !errors.Is(err, io.EOF) {
				t.Fatalf("%q: unexpected kind of error %v", data, err)
			}
			if res.Status != 0 || res.Body != nil {
				t.Fatalf("%q: error %v with a result %+v", data, err, res)
			}
			return
		}
		if res.Status < 100 || res.Status > 999 || res.Status < 200 && res.Status != 101 {
			t.Fatalf("%q: status %d", data, res.Status)
		}
		if len(res.Body) > MaxBodyBytes || len(res.Body) > len(data) {
			t.Fatalf("%q: %d bytes of body", data, len(res.Body))
		}
		if (head || res.Status == 101 || res.Status == 204 || res.Status == 304) && len(res.Body) > 0 {
			t.Fatalf("%q: a body for %s %d", data, method, res.Status)
		}
		if !bytes.Contains(data, res.Body) && !bytes.Contains(bytes.ToLower(data), []byte("chunked")) {
			t.Fatalf("%q: body %q is not in the input", data, res.Body)
		}

		// The same bytes through net/http, where it reads a final answer and all of its body.
		// It ignores Transfer-Encoding in an HTTP/1.0 answer, where drainit decodes chunks.
		std, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(data)), &http.Request{Method: method})
		if err != nil || std.StatusCode < 200 && std.StatusCode != 101 || res.FieldsTooLarge {
			return // net/http reads any amount of header fields
		}
		body, err := io.ReadAll(io.LimitReader(std.Body, MaxBodyBytes+1))
		if err != nil || len(body) > MaxBodyBytes ||
			std.ProtoMinor == 0 && bytes.Contains(bytes.ToLower(data), []byte("transfer-encoding")) {
			return
		}
		if std.StatusCode != res.Status || !bytes.Equal(body, res.Body) {
			t.Fatalf("%q: drainit read %d %q, net/http %d %q", data, res.Status, res.Body, std.StatusCode, body)
		}
	})
}
