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
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"

	"github.com/drainit/drainit/internal/config"
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
		"GET /x HTTP/1.1\r\nContent-Length: +1\r\n\r\nx":                    "HTTP/1.1 400 Bad Request",
		"GET /x HTTP/1.1\r\nContent-Length: -0\r\n\r\n":                     "HTTP/1.1 400 Bad Request",
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
	// A Transfer-Encoding of the hook's own is left out: beside Do's Content-Length it would make
	// the framing ambiguous (net/http refuses such a request: 400).
	r, err = Do(ctx, Call{Method: "PUT", URL: srv.URL + "/ok?q=1", Header: map[string]string{"X-A": "b", "Transfer-Encoding": "chunked"}, Body: []byte("hi")})
	if err != nil || r.Status != 200 || string(r.Body) != "PUT q=1 b hi" {
		t.Fatalf("Do with a Transfer-Encoding header: %v %d %q", err, r.Status, r.Body)
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
		r, err := parseRequest(bufio.NewReaderSize(strings.NewReader(string(b)), requestBufferSize))
		if err != nil {
			return
		}
		if !config.IsToken(r.Method) || !strings.HasPrefix(r.Path, "/") || r.body < 0 || strings.ContainsAny(r.Path, " \x00?") {
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

// tcpPair is both ends of a loopback TCP connection, the client's and the one the server
// accepted, closed when the test ends.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// serveWith runs s on a loopback port for the test's duration.
func serveWith(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// dialFrom connects to addr from a loopback address of its own (Linux routes all of 127/8 to lo).
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	if runtime.GOOS != "linux" {
		testenv.SkipElsewhere(t, "needs Linux: several loopback source addresses (127.0.0.2, …)")
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// request sends a well-formed request on c and returns the answer's status line.
func request(t *testing.T, c net.Conn) string {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return "write: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "read: " + err.Error()
	}
	return strings.TrimSpace(line)
}

// wasReset reports whether the server reset c. The server sheds in its accept loop before it
// starts serving the connection it made room for, so once that one is answered, a reset of c
// is already here: a short read deadline tells "reset" from "still open".
func wasReset(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return false
	}
	t.Fatalf("read on a connection: %v, want a reset or nothing", err)
	return false
}

// Below MaxConns nothing is shed, not even the connections of an address beyond its share:
// the kubelet may share its address with a slow client, and its request may be late on a busy
// node.
func TestNothingShedBelowMaxConns(t *testing.T) {
	addr := serveWith(t, &Server{Handler: echo, ReadTimeout: 10 * time.Second, HandlerTimeout: time.Second,
		WriteTimeout: time.Second, MaxConns: 10, MaxConnsPerIP: 1, ShedAfter: time.Nanosecond})
	a := dialFrom(t, addr, "127.0.0.2")
	b := dialFrom(t, addr, "127.0.0.2")
	// Connections are accepted in the order they were made: a and b are in when this one comes.
	if got := request(t, dialFrom(t, addr, "127.0.0.2")); got != "HTTP/1.1 200 OK" {
		t.Fatalf("a request from an address beyond its share: %q, want 200", got)
	}
	if wasReset(t, a) || wasReset(t, b) {
		t.Error("a connection was shed while the server was not full")
	}
}

// While an address holds more than its share, a full server sheds none of the others'
// connections, old and unfinished as they may be: it waits for room instead.
func TestFullServerSparesAddressesWithinShare(t *testing.T) {
	release := make(chan struct{})
	inHandler := make(chan struct{}, 2)
	h := func(ctx context.Context, r *Request) Response {
		inHandler <- struct{}{}
		<-release
		return Response{Status: 200}
	}
	addr := serveWith(t, &Server{Handler: h, ReadTimeout: 10 * time.Second, HandlerTimeout: 10 * time.Second,
		WriteTimeout: time.Second, MaxConns: 3, MaxConnsPerIP: 1, ShedAfter: time.Nanosecond})
	lone := dialFrom(t, addr, "127.0.0.3") // unfinished and old, of an address within its share
	for range 2 {                          // an address beyond its share, both in their handler
		c := dialFrom(t, addr, "127.0.0.2")
		if _, err := io.WriteString(c, "GET /hold HTTP/1.1\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		<-inHandler
	}
	newcomer := dialFrom(t, addr, "127.0.0.1")
	waiting := make(chan string, 1)
	go func() { waiting <- request(t, newcomer) }()
	select {
	case got := <-waiting:
		t.Fatalf("a newcomer got %q, want it to wait rather than shed a connection within its share", got)
	case <-time.After(200 * time.Millisecond): // it waits: nothing comes within this
	}
	if wasReset(t, lone) {
		t.Fatal("a connection of an address within its share was shed")
	}
	close(release) // the held requests are answered: room for the newcomer
	if got := <-waiting; got != "HTTP/1.1 200 OK" {
		t.Fatalf("the waiting newcomer got %q, want 200", got)
	}
}

// A full server sheds the oldest unfinished connection of the address holding the most, not the
// oldest connection overall, to serve a newcomer from elsewhere.
func TestFullServerShedsFromLargestHolder(t *testing.T) {
	addr := serveWith(t, &Server{Handler: echo, ReadTimeout: 10 * time.Second, HandlerTimeout: time.Second,
		WriteTimeout: time.Second, MaxConns: 3, MaxConnsPerIP: 3, ShedAfter: time.Nanosecond})
	lone := dialFrom(t, addr, "127.0.0.3") // the oldest, of an address holding one
	a1 := dialFrom(t, addr, "127.0.0.2")
	a2 := dialFrom(t, addr, "127.0.0.2")
	if got := request(t, dialFrom(t, addr, "127.0.0.1")); got != "HTTP/1.1 200 OK" {
		t.Fatalf("a request to a full server: %q, want 200", got)
	}
	if !wasReset(t, a1) {
		t.Error("the oldest unfinished connection of the largest holder was not shed")
	}
	if wasReset(t, a2) || wasReset(t, lone) {
		t.Error("a connection other than the largest holder's oldest was shed")
	}
}

// fullServer starts a server of two connections, both from 127.0.0.2: held, whose request
// waits in its handler until release is closed, and young, which sends nothing. perIP and quick
// are its MaxConnsPerIP and QuickShedRate; ShedAfter is an hour.
func fullServer(t *testing.T, perIP int, quick float64) (addr string, held, young net.Conn, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	inHandler := make(chan struct{}, 1)
	h := func(ctx context.Context, r *Request) Response {
		if r.Path == "/hold" {
			inHandler <- struct{}{}
			<-release
		}
		return Response{Status: 200}
	}
	addr = serveWith(t, &Server{Handler: h, ReadTimeout: 10 * time.Second, HandlerTimeout: 10 * time.Second,
		WriteTimeout: time.Second, MaxConns: 2, MaxConnsPerIP: perIP, ShedAfter: time.Hour, QuickShedRate: quick})
	held = dialFrom(t, addr, "127.0.0.2")
	if _, err := io.WriteString(held, "GET /hold HTTP/1.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-inHandler
	young = dialFrom(t, addr, "127.0.0.2") // fills the server
	return addr, held, young, release
}

// A full server with nothing it may shed (a request in its handler, connections younger than
// ShedAfter, even of an address beyond its share) leaves newcomers waiting rather than refusing
// them, and serves them as soon as a connection ends.
func TestFullServerWaitsRatherThanRefuses(t *testing.T) {
	for _, perIP := range []int{2, 1} { // the young connection's address within its share, beyond it (no QuickShedRate)
		t.Run(fmt.Sprintf("share %d", perIP), func(t *testing.T) {
			addr, held, young, release := fullServer(t, perIP, 0) // young: too young to shed
			newcomer := dialFrom(t, addr, "127.0.0.1")
			waiting := make(chan string, 1)
			go func() { waiting <- request(t, newcomer) }()
			select {
			case got := <-waiting:
				t.Fatalf("a newcomer to a full server with nothing to shed got %q, want it to wait", got)
			case <-time.After(200 * time.Millisecond): // it waits: nothing comes within this
			}
			young.Close() // a connection ends: room for the newcomer
			if got := <-waiting; got != "HTTP/1.1 200 OK" {
				t.Fatalf("the waiting newcomer got %q, want 200", got)
			}
			close(release)
			if got, err := bufio.NewReader(held).ReadString('\n'); err != nil || strings.TrimSpace(got) != "HTTP/1.1 200 OK" {
				t.Fatalf("the request in its handler: %q %v, want it answered 200, never shed", got, err)
			}
		})
	}
}

// TestFullServerShedsBeyondShareAtOnce: a young connection gets its time to send a request
// (above), but with QuickShedRate not one of an address beyond its share: a flooder's thousands
// of connections must not each hold a probe from elsewhere back for ShedAfter in the listen
// backlog.
func TestFullServerShedsBeyondShareAtOnce(t *testing.T) {
	addr, _, young, release := fullServer(t, 1, 1000) // young: its address is beyond its share
	defer close(release)
	// The newcomer is answered though ShedAfter is an hour: the young connection is shed.
	if got := request(t, dialFrom(t, addr, "127.0.0.1")); got != "HTTP/1.1 200 OK" {
		t.Fatalf("the newcomer got %q, want 200", got)
	}
	_ = young.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := young.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the young connection beyond its share was not shed: read %d bytes", n)
	}
}

// A full server filled by several addresses, each within MaxConnsPerIP (a flood from many
// source addresses), still sheds young connections at QuickShedRate: an address's share is also
// no more than an equal part of MaxConns among the addresses holding connections. Without it, 40
// addresses holding 60 slow connections each (2,400, re-opened at once) held the real binary's
// /readyz back 0.94 s, and 70 of them 1.8 s: past the kubelet's default 1 s probe timeout.
func TestFullServerShedsAtOnceAmongManyAddresses(t *testing.T) {
	addr := serveWith(t, &Server{Handler: echo, ReadTimeout: 10 * time.Second, HandlerTimeout: time.Second,
		WriteTimeout: time.Second, MaxConns: 4, MaxConnsPerIP: 4, ShedAfter: time.Hour, QuickShedRate: 1000})
	// 127.0.0.2 holds 3 and 127.0.0.3 one: both within MaxConnsPerIP, none old enough to shed.
	var young []net.Conn
	for _, from := range []string{"127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3"} {
		young = append(young, dialFrom(t, addr, from))
	}
	got := make(chan string, 1)
	go func() { got <- request(t, dialFrom(t, addr, "127.0.0.1")) }()
	select {
	case g := <-got:
		if g != "HTTP/1.1 200 OK" {
			t.Fatalf("the newcomer got %q, want 200", g)
		}
	case <-time.After(5 * time.Second): // ShedAfter is an hour: only a quick shed lets it in
		t.Fatal("the newcomer waits: nothing was shed from an address holding more than an equal part of MaxConns")
	}
	if !wasReset(t, young[0]) {
		t.Error("the oldest young connection of 127.0.0.2, beyond an equal part (1 of 4 among 3 addresses, the newcomer's included), was not shed")
	}
	if wasReset(t, young[3]) {
		t.Error("the connection of 127.0.0.3, within an equal part, was shed")
	}
}

// HeaderTimeout cuts a client that does not finish its request head, from the accept, even
// though ReadTimeout is longer.
func TestHeaderTimeout(t *testing.T) {
	const headerTimeout = 200 * time.Millisecond
	addr := serveWith(t, &Server{Handler: echo, HeaderTimeout: headerTimeout, ReadTimeout: 10 * time.Second,
		HandlerTimeout: time.Second, WriteTimeout: time.Second})
	c := dialFrom(t, addr, "127.0.0.1")
	t0 := time.Now()
	_, _ = io.WriteString(c, "GET /x HTTP/1.1\r\nX-Slow: ")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	d := time.Since(t0)
	if strings.TrimSpace(line) != "HTTP/1.1 408 Request Timeout" {
		t.Fatalf("unfinished head: %q, want 408", line)
	}
	// Cut at the header timeout, give or take scheduling: well before the read timeout.
	if d < headerTimeout-10*time.Millisecond || d > headerTimeout+2*time.Second {
		t.Fatalf("cut after %v, want about HeaderTimeout (%v)", d, headerTimeout)
	}
}

func TestTokenBucket(t *testing.T) {
	var b tokenBucket
	t0 := time.Unix(1000, 0)
	for i := range 3 { // the burst
		if ok, _ := b.take(t0, 10, 3); !ok {
			t.Fatalf("token %d of a burst of 3 missing", i)
		}
		b.spend()
	}
	ok, next := b.take(t0, 10, 3)
	if ok || next != t0.Add(100*time.Millisecond) {
		t.Fatalf("after the burst: %v, next %v; want none until 100ms on", ok, next.Sub(t0))
	}
	if ok, _ := b.take(t0.Add(100*time.Millisecond), 10, 3); !ok {
		t.Fatal("no token at the rate's pace")
	}
	if ok, next := b.take(t0, 0, 3); ok || !next.IsZero() {
		t.Fatal("a rate of 0 gave a token, or a time for one")
	}
}

// TestAbsoluteFormTarget: a proxy's absolute-form request target is read as RFC 3986 reads the
// URI: the authority ends at the first "/" or "?", so "http://x?/status" is "/" with a query,
// never /status; another scheme, or a fragment, is malformed.
func TestAbsoluteFormTarget(t *testing.T) {
	for target, want := range map[string]string{
		"http://h:1/a/b":        "/a/b",
		"HTTP://h/a?q=1":        "/a ? q=1",
		"http://h":              "/",
		"http://x?/status":      "/ ? /status",
		"https://h/healthz":     "/healthz",
		"foo://x/healthz":       "malformed",
		"garbage/x://y/healthz": "malformed",
		"http://x/a#/status":    "malformed",
		"x":                     "malformed",
	} {
		r, err := parseRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\n\r\n")))
		got := "malformed"
		if err == nil {
			got = r.Path
			if r.Query != "" {
				got += " ? " + r.Query
			}
		} else if !errors.Is(err, ErrMalformed) {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%q: %q, want %q", target, got, want)
		}
	}
}

// TestRefusalNotReset: a request refused before it was read whole (a head too large, a body
// too large, pipelined requests) gets its answer and then an orderly close, not a reset that
// would make a client still sending lose the answer.
func TestRefusalNotReset(t *testing.T) {
	_, addr := startServer(t, echo, 5*time.Second)
	for _, c := range []struct{ name, req, want string }{
		{"head too large", "GET /" + strings.Repeat("a", 1<<20) + " HTTP/1.1\r\n\r\n", "HTTP/1.1 431"},
		{"body too large", "POST /x HTTP/1.1\r\nContent-Length: 70000\r\n\r\n" + strings.Repeat("b", 70000), "HTTP/1.1 413"},
		{"pipelined", strings.Repeat("GET /x HTTP/1.1\r\n\r\n", 2000), "HTTP/1.1 200"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		sent := make(chan error, 1)
		go func() { _, err := io.WriteString(conn, c.req); sent <- err }()
		got, err := io.ReadAll(conn)
		if err != nil || !strings.HasPrefix(string(got), c.want) {
			t.Errorf("%s: read %.40q, %v; want %q and then an orderly close", c.name, got, err, c.want)
		}
		if err := <-sent; err != nil {
			t.Errorf("%s: sending: %v", c.name, err)
		}
		conn.Close()
	}
}

// TestExpectContinue: a client that sends "Expect: 100-continue" and waits for leave to send
// its body gets it at once, then the answer.
func TestExpectContinue(t *testing.T) {
	_, addr := startServer(t, echo, 5*time.Second)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || strings.TrimSpace(line) != "HTTP/1.1 100 Continue" {
		t.Fatalf("before the body: %q, %v; want 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil { // the 100's empty line
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "abc"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || strings.TrimSpace(line) != "HTTP/1.1 200 OK" {
		t.Fatalf("after the body: %q, %v; want 200", line, err)
	}
}

// A server that gets to a connection late, its deadlines already past (drainit starved of CPU:
// a container throttled at its CPU limit, a loaded node), still answers the request the client
// sent in time: the kubelet's /prestop call must not be closed unanswered (it saw EOF).
func TestLateServerStillReadsWhatCameInTime(t *testing.T) {
	client, sc := tcpPair(t)
	if _, err := io.WriteString(client, "GET /prestop HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: echo, HeaderTimeout: time.Second, ReadTimeout: 2 * time.Second,
		HandlerTimeout: time.Second, WriteTimeout: time.Second, ctx: context.Background()}
	// Accepted a minute ago, as far as the server's clock goes: both deadlines are long past.
	s.serveConn(&conn{Conn: sc, ip: "127.0.0.1", accepted: time.Now().Add(-time.Minute)})
	sc.Close()
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, _ := bufio.NewReader(client).ReadString('\n')
	if got := strings.TrimSpace(line); got != "HTTP/1.1 200 OK" {
		t.Fatalf("a request sent in time, read late: %q, want 200 (an empty line: closed unanswered)", got)
	}
}

// TestConnected: a handler that waits can tell whether its client still waits for the answer:
// yes while the connection is open, also past the server's read deadline (the head's timeout,
// which a handler that waits outlasts: the test moves it into the past rather than wait it out)
// and with data pipelined after the request (read into the server's buffer); no once the client
// has closed it.
func TestConnected(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		started, release := make(chan *Request, 1), make(chan struct{})
		_, addr := startServer(t, func(ctx context.Context, r *Request) Response {
			started <- r
			<-release
			return Response{Status: 200}
		}, 300*time.Millisecond)
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		req := "GET /wait HTTP/1.1\r\n\r\n"
		if pipelined {
			req += "GET /more HTTP/1.1\r\n\r\n"
		}
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		r := <-started
		if err := r.peer.SetReadDeadline(time.Unix(1, 0)); err != nil {
			t.Fatal(err)
		}
		if !r.Connected() {
			t.Errorf("pipelined %v: Connected false with the client still there", pipelined)
		}
		c.Close()
		deadline := time.Now().Add(5 * time.Second)
		for r.Connected() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if r.Connected() {
			t.Errorf("pipelined %v: Connected true 5 s after the client closed its connection", pipelined)
		}
		close(release)
	}
	if !(&Request{}).Connected() {
		t.Error("a request not read from a connection is taken for one whose client has gone")
	}
}

// TestConnectedAfterServerClose: a connection this side has closed already (the handler's time
// ran out, the server closed it) has no one waiting on it: Connected is false, not the "cannot
// tell" true, which would keep a /prestop call that is long gone counted as the kubelet's.
func TestConnectedAfterServerClose(t *testing.T) {
	_, s := tcpPair(t)
	r := &Request{peer: s}
	if !r.Connected() {
		t.Fatal("Connected false with both ends open")
	}
	s.Close()
	if r.Connected() {
		t.Error("Connected true on a connection the server has closed")
	}
}

// A malformed status line is quoted in the error, but not all of it: a server that sends 8 KiB
// of it (escaped: up to four times as much) would otherwise put one huge line in drainit's log.
func TestBadStatusLineQuotedShort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Read(make([]byte, 4096))
		_, _ = c.Write([]byte("HTTP/1.1 5000 " + strings.Repeat("\xff", 8000) + "\r\n\r\n"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = Do(ctx, Call{URL: "http://" + ln.Addr().String() + "/"})
	if !errors.Is(err, ErrMalformed) || len(err.Error()) > 4*maxQuoted+100 {
		t.Errorf("Do: an error of %d bytes (%v), want ErrMalformed quoting at most %d bytes of the line", len(fmt.Sprint(err)), errors.Is(err, ErrMalformed), maxQuoted)
	}
}

// A URL's IPv6 zone is used to dial, and not sent in Host (RFC 6874).
func TestZoneNotInHost(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		testenv.SkipUnlessCI(t, "no IPv6 loopback: "+err.Error())
	}
	hosts := make(chan string, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hosts <- r.Host })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := Do(ctx, Call{URL: "http://[::1%25lo]:" + port + "/"}); err != nil {
		t.Fatal(err)
	}
	if h := <-hosts; h != "[::1]:"+port {
		t.Errorf("Host %q, want [::1]:%s", h, port)
	}
}
