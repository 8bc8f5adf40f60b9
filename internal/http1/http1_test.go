package http1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServer serves h on a loopback port for the test's duration.
func startServer(t *testing.T, h Handler, readTimeout time.Duration) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: h, ReadTimeout: readTimeout, HandlerTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s, ln.Addr().String()
}

func echo(ctx context.Context, r *Request) Response {
	return Response{Status: 200, Body: []byte(fmt.Sprintf("%s %s q=%s auth=%s", r.Method, r.Path, r.Query, r.Header.Get("Authorization")))}
}

// raw sends bytes and returns the status line of the answer ("" when the server closed without one).
func raw(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

func TestServerWithStandardClient(t *testing.T) {
	_, addr := startServer(t, echo, 5*time.Second)
	req, _ := http.NewRequest("POST", "http://"+addr+"/prestop?x=1", strings.NewReader("ignored body"))
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "POST /prestop q=x=1 auth=Bearer t" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	resp, err = http.Head("http://" + addr + "/healthz")
	if err != nil || resp.StatusCode != 200 || resp.ContentLength <= 0 {
		t.Fatalf("HEAD: %v %+v", err, resp)
	}
}

func TestServerRefusesMalformed(t *testing.T) {
	_, addr := startServer(t, echo, 5*time.Second)
	cases := map[string]string{
		"GET /x HTTP/1.1\r\nHost: x\r\n\r\n":                                "HTTP/1.1 200 OK",
		"GET http://h:1/a/b HTTP/1.1\r\n\r\n":                               "HTTP/1.1 200 OK",
		"GET /x HTTP/2.0\r\n\r\n":                                           "HTTP/1.1 400 Bad Request",
		"GET /x\r\n\r\n":                                                    "HTTP/1.1 400 Bad Request",
		"G(T /x HTTP/1.1\r\n\r\n":                                           "HTTP/1.1 400 Bad Request",
		"GET * HTTP/1.1\r\n\r\n":                                            "HTTP/1.1 400 Bad Request",
		"GET /x HTTP/1.1\r\nNo colon\r\n\r\n":                               "HTTP/1.1 400 Bad Request",
		"GET /x HTTP/1.1\r\nA: b\r\n folded\r\n\r\n":                        "HTTP/1.1 400 Bad Request",
		"GET /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n": "HTTP/1.1 400 Bad Request",
		"GET /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n":                     "HTTP/1.1 400 Bad Request",
		"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n":   "HTTP/1.1 501 Not Implemented",
		"POST /x HTTP/1.1\r\nContent-Length: 100000\r\n\r\n":                "HTTP/1.1 413 Content Too Large",
		"GET /x HTTP/1.1\r\nX: " + strings.Repeat("a", 9000) + "\r\n\r\n":   "HTTP/1.1 431 Request Header Fields Too Large",
	}
	for req, want := range cases {
		if got := raw(t, addr, req); got != want {
			t.Errorf("%.60q: %q, want %q", req, got, want)
		}
	}
}

func TestSlowClientCutOffWithoutBlockingOthers(t *testing.T) {
	_, addr := startServer(t, echo, 300*time.Millisecond)
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_, _ = io.WriteString(slow, "GET /x HTTP/1.1\r\nX-Slow: ") // and nothing more
	// Meanwhile another client is served at once.
	if got := raw(t, addr, "GET /y HTTP/1.1\r\n\r\n"); got != "HTTP/1.1 200 OK" {
		t.Fatalf("a slow client blocked another: %q", got)
	}
	_ = slow.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(slow).ReadString('\n')
	if strings.TrimSpace(line) != "HTTP/1.1 408 Request Timeout" {
		t.Fatalf("slow client got %q, want a 408 at the read timeout", line)
	}
}

func TestCloseEndsHandlers(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	s, addr := startServer(t, func(ctx context.Context, r *Request) Response {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return Response{Status: 503}
	}, time.Second)
	go func() {
		if c, err := net.Dial("tcp", addr); err == nil {
			_, _ = io.WriteString(c, "GET /wait HTTP/1.1\r\n\r\n")
			_, _ = io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	<-started
	s.Close()
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("handler ctx ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the handler's ctx")
	}
}

func TestClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.RawQuery, r.Header.Get("X-A"), b)
		case "/big":
			w.Write([]byte(strings.Repeat("x", MaxBodyBytes*2)))
		case "/slow":
			<-r.Context().Done()
		default:
			w.WriteHeader(500)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := Do(ctx, Call{Method: "PUT", URL: srv.URL + "/ok?q=1", Header: map[string]string{"X-A": "b"}, Body: []byte("hi")})
	if err != nil || r.Status != 200 || string(r.Body) != "PUT q=1 b hi" {
		t.Fatalf("Do: %v %d %q", err, r.Status, r.Body)
	}
	if r, err := Do(ctx, Call{URL: srv.URL + "/fail"}); err != nil || r.Status != 500 {
		t.Fatalf("500: %v %d", err, r.Status)
	}
	if r, err := Do(ctx, Call{URL: srv.URL + "/big"}); err != nil || len(r.Body) != MaxBodyBytes {
		t.Fatalf("big body: %v, %d bytes kept", err, len(r.Body))
	}
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := Do(short, Call{URL: srv.URL + "/slow"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow server: %v, want the deadline", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := ln.Addr().String()
	ln.Close()
	if _, err := Do(ctx, Call{URL: "http://" + down + "/"}); err == nil {
		t.Fatal("connection refused not reported")
	}
	for _, u := range []string{"https://x/", "ftp://x/", "http:///x", "http://u:p@x/", "::"} {
		if _, err := Do(ctx, Call{URL: u}); err == nil {
			t.Errorf("Do(%q) accepted", u)
		}
	}
	if _, err := Do(ctx, Call{URL: srv.URL, Header: map[string]string{"X": "a\r\nEvil: 1"}}); err == nil {
		t.Error("header injection accepted")
	}
}

// FuzzParseRequest: any bytes give a request or an error, never a panic; what parses is sane.
func FuzzParseRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRequest(bufio.NewReaderSize(strings.NewReader(string(b)), 4096))
		if err != nil {
			return
		}
		if !IsToken(r.Method) || !strings.HasPrefix(r.Path, "/") || r.body < 0 || strings.ContainsAny(r.Path, " \x00?") {
			t.Fatalf("parsed %q into %+v", b, r)
		}
	})
}

// failingListener fails its first n accepts with err, as accept4 does out of file descriptors.
type failingListener struct {
	net.Listener
	n   int
	err error
}

func (l *failingListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, l.err
	}
	return l.Listener.Accept()
}

// A failed accept (EMFILE under fd pressure) is no reason to stop serving: the port stays open
// and the kernel keeps queueing connections, which would then hang unanswered.
func TestServeRetriesFailedAccepts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan error, 10)
	s := &Server{Handler: echo, ReadTimeout: time.Second, HandlerTimeout: time.Second, WriteTimeout: time.Second,
		AcceptError: func(err error, _ time.Duration) { heard <- err }}
	done := make(chan error, 1)
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	go func() { done <- s.Serve(&failingListener{Listener: ln, n: 3, err: emfile}) }()
	if got := raw(t, ln.Addr().String(), "GET /y HTTP/1.1\r\n\r\n"); got != "HTTP/1.1 200 OK" {
		t.Fatalf("after failed accepts the server answered %q", got)
	}
	if n := len(heard); n != 3 {
		t.Errorf("AcceptError heard %d errors, want the 3 EMFILE", n)
	} else if err := <-heard; !errors.Is(err, syscall.EMFILE) {
		t.Errorf("AcceptError heard %v, want EMFILE", err)
	}
	s.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v after Close, want ErrServerClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
}
