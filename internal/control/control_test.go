package control

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/drainit/drainit/internal/config"
	"github.com/drainit/drainit/internal/http1"
)

// fakeBackend is a Backend made of funcs, so each test says only what it needs.
type fakeBackend struct {
	prestop func(ctx context.Context) (Status, error)
	status  func(ctx context.Context) (Status, error)
	kubelet func(bool) // what Prestop was told of its caller, when not nil
}

var _ Backend = (*fakeBackend)(nil)

func (f *fakeBackend) Prestop(ctx context.Context, kubelet bool, _ func() bool) (Status, error) {
	if f.kubelet != nil {
		f.kubelet(kubelet)
	}
	return f.prestop(ctx)
}
func (f *fakeBackend) Status(ctx context.Context) (Status, error) { return f.status(ctx) }

func running(ready, draining bool) func(context.Context) (Status, error) {
	return func(context.Context) (Status, error) {
		return Status{Phase: "running", Running: true, Ready: ready, Draining: draining}, nil
	}
}

// result is an answer as a test reads it.
type result struct {
	Code int
	Body string
}

func do(t *testing.T, s *Server, method, path string, hdr map[string]string) result {
	t.Helper()
	h := textproto.MIMEHeader{}
	for k, v := range hdr {
		h.Set(k, v)
	}
	r := s.Handle(context.Background(), &http1.Request{Method: method, Path: path, Header: h, RemoteAddr: "127.0.0.1:1"})
	return result{r.Status, string(r.Body)}
}

func TestEndpoints(t *testing.T) {
	var prestops atomic.Int32
	b := &fakeBackend{
		prestop: func(context.Context) (Status, error) {
			prestops.Add(1)
			return Status{Phase: "drained", Drained: true}, nil
		},
		status: running(true, false),
	}
	h := New(b, "", time.Second, zerolog.Nop())
	cases := []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/healthz", 200, "ok"},
		{"HEAD", "/readyz", 200, ""},
		{"GET", "/readyz", 200, "ready"},
		{"GET", "/status", 200, `"phase":"running"`},
		{"POST", "/prestop", 200, `"drained":true`},
		{"GET", "/prestop", 200, `"phase":"drained"`},
		{"DELETE", "/prestop", 405, ""},
		{"POST", "/healthz", 405, ""},
		{"GET", "/", 404, ""},
		{"GET", "/prestop/x", 404, ""},
	}
	for _, c := range cases {
		rec := do(t, h, c.method, c.path, nil)
		if rec.Code != c.code || !strings.Contains(rec.Body, c.body) {
			t.Errorf("%s %s = %d %q, want %d containing %q", c.method, c.path, rec.Code, rec.Body, c.code, c.body)
		}
	}
	if n := prestops.Load(); n != 2 {
		t.Errorf("backend Prestop called %d times, want 2 (405s must not reach it)", n)
	}
}

func TestReadiness(t *testing.T) {
	for _, c := range []struct {
		ready, draining bool
		code            int
	}{{false, false, 503}, {true, false, 200}, {true, true, 503}} {
		h := New(&fakeBackend{status: running(c.ready, c.draining)}, "", time.Second, zerolog.Nop())
		if rec := do(t, h, "GET", "/readyz", nil); rec.Code != c.code {
			t.Errorf("ready=%v draining=%v: /readyz = %d, want %d", c.ready, c.draining, rec.Code, c.code)
		}
	}
	gone := &fakeBackend{status: func(context.Context) (Status, error) { return Status{Running: false}, nil }}
	if rec := do(t, New(gone, "", time.Second, zerolog.Nop()), "GET", "/healthz", nil); rec.Code != 503 {
		t.Errorf("/healthz with the app gone = %d, want 503", rec.Code)
	}
}

func TestToken(t *testing.T) {
	var prestops atomic.Int32
	b := &fakeBackend{
		prestop: func(context.Context) (Status, error) { prestops.Add(1); return Status{}, nil },
		status:  running(true, false),
	}
	var logs strings.Builder
	h := New(b, "s3cret", time.Second, zerolog.New(&logs))
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret2", "Bearer s3cre", "s3cret", "Bearer", "Bearer ",
		"Bearers3cret", "Basic s3cret", "Bearer s3cret s3cret", "Bearer\ts3cret"} {
		rec := do(t, h, "POST", "/prestop", map[string]string{"Authorization": auth})
		if rec.Code != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, rec.Code)
		}
		if rec := do(t, h, "GET", "/status", map[string]string{"Authorization": auth}); rec.Code != 401 {
			t.Errorf("/status with Authorization %q: %d, want 401", auth, rec.Code)
		}
	}
	if prestops.Load() != 0 {
		t.Fatal("an unauthorized /prestop reached the backend")
	}
	// RFC 9110: the scheme's name in any case, one or more spaces before the token.
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "Bearer  s3cret"} {
		if rec := do(t, h, "POST", "/prestop", map[string]string{"Authorization": auth}); rec.Code != 200 {
			t.Errorf("Authorization %q: %d, want 200", auth, rec.Code)
		}
	}
	// Health endpoints stay open: the kubelet's probes carry no token.
	if rec := do(t, h, "GET", "/healthz", nil); rec.Code != 200 {
		t.Errorf("/healthz without token: %d", rec.Code)
	}
	if strings.Contains(logs.String(), "s3cret") || strings.Contains(logs.String(), "wrong") {
		t.Errorf("a token reached the log: %s", logs.String())
	}
}

// TestRefusedRequestsDoNotFloodTheLog: a client without the token, sending request after
// request, gets a warning in drainit's log now and then, with the count, not one per request.
func TestRefusedRequestsDoNotFloodTheLog(t *testing.T) {
	var logs strings.Builder
	h := New(&fakeBackend{status: running(true, false)}, "s3cret", time.Second, zerolog.New(&logs))
	t0 := time.Now()
	for range 500 {
		if rec := do(t, h, "GET", "/status", map[string]string{"Authorization": "Bearer x"}); rec.Code != 401 {
			t.Fatalf("wrong token: %d", rec.Code)
		}
	}
	lines := strings.Count(logs.String(), "without the right token refused")
	if most := 1 + int(time.Since(t0)/shedLogEvery); lines < 1 || lines > most {
		t.Errorf("%d warnings for 500 refused requests, want 1 to %d", lines, most)
	}
}

// TestPrestopWaitersCapped: /prestop calls wait in their handler for the drain, where they are
// never shed; past maxPrestopWaiting the rest are answered 503 at once, so that callers cannot
// hold every connection the kubelet's probes need. The ones waiting get their answer.
func TestPrestopWaitersCapped(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, maxPrestopWaiting+1)
	b := &fakeBackend{
		prestop: func(context.Context) (Status, error) {
			entered <- struct{}{}
			<-release
			return Status{Phase: "drained", Drained: true}, nil
		},
		status: running(true, true),
	}
	h := New(b, "", time.Minute, zerolog.Nop())
	answers := make(chan int, maxPrestopWaiting)
	for range maxPrestopWaiting {
		go func() { answers <- do(t, h, "POST", "/prestop", nil).Code }()
	}
	timeout := time.After(10 * time.Second)
	for i := range maxPrestopWaiting {
		select {
		case <-entered:
		case <-timeout:
			t.Fatalf("%d of %d /prestop calls reached the backend", i, maxPrestopWaiting)
		}
	}
	if rec := do(t, h, "POST", "/prestop", nil); rec.Code != 503 || !strings.Contains(rec.Body, "too many /prestop calls waiting") {
		t.Errorf("one /prestop past the cap: %d %q, want 503 at once", rec.Code, rec.Body)
	}
	if len(entered) != 0 {
		t.Errorf("the call past the cap reached the backend")
	}
	close(release)
	for range maxPrestopWaiting {
		if code := <-answers; code != 200 {
			t.Errorf("a waiting /prestop got %d, want 200", code)
		}
	}
	// Room again once they are answered.
	if rec := do(t, h, "POST", "/prestop", nil); rec.Code != 200 {
		t.Errorf("/prestop after the waiters were answered: %d", rec.Code)
	}
}

// A /prestop whose caller hangs up stops waiting: its place among the waiting calls, and its
// connection, are free again for a retry (the kubelet's, after it restarted), which would
// otherwise be refused until the drain ends. Here one place, as under a low RLIMIT_NOFILE.
func TestPrestopHungUpGivesUpItsPlace(t *testing.T) {
	entered := make(chan struct{}, 2)
	ended := make(chan error, 2)
	b := &fakeBackend{
		prestop: func(ctx context.Context) (Status, error) {
			entered <- struct{}{}
			<-ctx.Done() // the drain outlasts the test
			ended <- context.Cause(ctx)
			return Status{}, ctx.Err()
		},
		status: running(true, true),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(b, "", time.Minute, zerolog.Nop())
	srv.prestopMax = 1
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	call := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /prestop HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		return c
	}
	first := call()
	<-entered
	first.Close()
	select {
	case cause := <-ended:
		if !errors.Is(cause, errHungUp) {
			t.Errorf("the first call's wait ended by %v, want errHungUp", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the first call still waits 10 s after its caller hung up")
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.prestopWaiting.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d /prestop calls still count as waiting 10 s after the only caller hung up", srv.prestopWaiting.Load())
		}
		time.Sleep(time.Millisecond)
	}
	second := call()
	defer second.Close()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("a /prestop after the first caller hung up did not reach the backend")
	}
}

func TestSameToken(t *testing.T) {
	for _, c := range []struct {
		got, want string
		same      bool
	}{{"s3cret", "s3cret", true}, {"s3cre", "s3cret", false}, {"s3cret\x00", "s3cret", false}, {"", "", true}, {"a", "", false}} {
		if sameToken(c.got, c.want) != c.same {
			t.Errorf("sameToken(%q, %q) = %v", c.got, c.want, !c.same)
		}
	}
}

// serve runs a server for b on a loopback port until the test ends, and returns its address.
func serve(t *testing.T, b Backend) string {
	t.Helper()
	return serveWithToken(t, b, "")
}

// serveWithToken is serve with token required on /prestop and /status.
func serveWithToken(t *testing.T, b Backend, token string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(b, token, time.Second, zerolog.Nop())
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// A client that sends its headers one byte at a time must not hold up a concurrent /prestop:
// the stop sequence cannot wait on a stranger's connection.
func TestSlowClientDoesNotBlockPrestop(t *testing.T) {
	b := &fakeBackend{
		prestop: func(context.Context) (Status, error) { return Status{Drained: true}, nil },
		status:  running(true, false),
	}
	addr := serve(t, b)

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	stopSlow := make(chan struct{})
	defer close(stopSlow)
	go func() {
		for _, c := range []byte("GET /prestop HTTP/1.1\r\nHost: x\r\nX-Slow: ") {
			select {
			case <-stopSlow:
				return
			case <-time.After(100 * time.Millisecond): // the slowness is the point of the test
			}
			if _, err := slow.Write([]byte{c}); err != nil {
				return
			}
		}
	}()
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Post("http://"+addr+"/prestop", "", nil)
	if err != nil {
		t.Fatalf("/prestop next to a slow client: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/prestop = %d", resp.StatusCode)
	}
}

// An oversized header block is refused rather than read without bound.
func TestHeaderLimit(t *testing.T) {
	b := &fakeBackend{status: running(true, false)}
	addr := serve(t, b)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 64<<10))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("64 KiB of headers: %d, want 431", resp.StatusCode)
	}
}

// The longest token drainit accepts (config.MaxTokenBytes) fits in a request's head with what
// the kubelet's httpGet preStop sends besides it (its own header fields, a pod's httpHeaders),
// through the real server: drainit refuses a longer one at start rather than answer 431 to every
// preStop.
func TestLongestTokenFits(t *testing.T) {
	token := strings.Repeat("t", config.MaxTokenBytes)
	addr := serveWithToken(t, &fakeBackend{
		prestop: func(context.Context) (Status, error) { return Status{Drained: true}, nil },
		status:  running(true, false),
	}, token)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	podHeaders := ""
	for i := range 8 {
		podHeaders += fmt.Sprintf("X-Pod-Header-%d: %s\r\n", i, strings.Repeat("v", 200))
	}
	fmt.Fprintf(c, "GET /prestop HTTP/1.1\r\nHost: 10.244.17.203:8081\r\nUser-Agent: kube-lifecycle/1.33\r\n"+
		"Accept: */*\r\n%sAuthorization: Bearer %s\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n", podHeaders, token)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/prestop with a %d-byte token: %d, want 200", len(token), resp.StatusCode)
	}
}

// FuzzHandler sends arbitrary methods, paths and Authorization headers: the handler must not
// panic, must answer with a known status, and must never start the stop sequence without the
// token.
func FuzzHandler(f *testing.F) {
	f.Fuzz(func(t *testing.T, method, path, auth string) {
		var called atomic.Bool
		b := &fakeBackend{
			prestop: func(context.Context) (Status, error) { called.Store(true); return Status{}, nil },
			status:  running(true, false),
		}
		s := New(b, "tok", time.Second, zerolog.New(io.Discard))
		rec := do(t, s, method, path, map[string]string{"Authorization": auth})
		switch rec.Code {
		case 200, 401, 404, 405, 503:
		default:
			t.Fatalf("%q %q: status %d", method, path, rec.Code)
		}
		if called.Load() && auth != "Bearer tok" {
			t.Fatalf("%q %q with Authorization %q started the stop sequence", method, path, auth)
		}
	})
}

// The connections held at once leave fdReserve of RLIMIT_NOFILE to the rest of drainit: all of
// maxConns where descriptors abound, fewer where they would run out first, and always one.
func TestConnLimit(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		open   int
		want   int
	}{
		{1 << 20, 12, maxConns},
		{1024, 10, maxConns},
		{512, 10, 512 - 10 - fdReserve},
		{32, 9, 32 - 9 - fdReserve},
		{16, 9, 1},
		{1 << 63, 10, maxConns},
	} {
		if got := connLimit(c.nofile, c.open); got != c.want {
			t.Errorf("connLimit(%d, %d) = %d, want %d", c.nofile, c.open, got, c.want)
		}
	}
}

// TestPrestopCaller: the backend is told whether a /prestop is the kubelet's preStop hook, by
// its User-Agent: the kubelet's httpGet ("kube-lifecycle/1.33") or `drainit prestop`; anyone
// else's (curl, a deploy tool, none) is not, as the kubelet's grace period says nothing of it.
func TestPrestopCaller(t *testing.T) {
	for ua, want := range map[string]bool{
		"kube-lifecycle/1.33": true, "kube-lifecycle/1.36": true, PrestopUserAgent: true,
		"": false, "curl/7.88.1": false, "kube-probe/1.33": false, "drainit": false, "drainit-prestop/2": false,
		"Kube-Lifecycle/1.33": false, " kube-lifecycle/1.33": false,
	} {
		var told []bool
		b := &fakeBackend{
			prestop: func(context.Context) (Status, error) { return Status{Drained: true}, nil },
			kubelet: func(k bool) { told = append(told, k) },
		}
		hdr := map[string]string{}
		if ua != "" {
			hdr["User-Agent"] = ua
		}
		if rec := do(t, New(b, "", time.Second, zerolog.Nop()), "GET", "/prestop", hdr); rec.Code != 200 || len(told) != 1 || told[0] != want {
			t.Errorf("User-Agent %q: %d, the backend told kubelet=%v; want 200 and kubelet=%v", ua, rec.Code, told, want)
		}
	}
}
