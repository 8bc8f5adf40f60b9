package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// closedAddr returns a loopback address where connections are refused: a socket holds the port
// (so no other test gets it) but does not listen until listen is called.
func closedAddr(t *testing.T) (addr string, listen func()) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*unix.SockaddrInet4).Port))
	return addr, func() {
		// The kernel completes connections into the backlog: a TCP probe sees the port ready.
		if err := unix.Listen(fd, 16); err != nil {
			t.Fatal(err)
		}
	}
}

func mustHTTP(t *testing.T, spec string) Hook {
	t.Helper()
	h, err := ParseHTTP("offline-http", spec)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHTTPHookSendsRequest(t *testing.T) {
	t.Parallel()
	type seen struct{ method, path, header, host, body string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.URL.RequestURI(), r.Header.Get("X-Service-Id"), r.Host, string(b)}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()

	spec, _ := json.Marshal(map[string]any{
		"method": "put", "url": srv.URL + "/v1/agent/service/deregister?id=web",
		"headers": map[string]string{"X-Service-Id": "web-1", "Host": "consul.local"}, "body": `{"x":1}`,
	})
	if err := mustHTTP(t, string(spec)).Run(context.Background()); err != nil {
		t.Fatalf("Run on a 202: %v", err)
	}
	want := seen{"PUT", "/v1/agent/service/deregister?id=web", "web-1", "consul.local", `{"x":1}`}
	if s := <-got; s != want {
		t.Errorf("server saw %+v, want %+v", s, want)
	}

	if err := mustHTTP(t, srv.URL+"/plain").Run(context.Background()); err != nil {
		t.Errorf("GET form: %v", err)
	}
	if s := <-got; s.method != "GET" || s.path != "/plain" {
		t.Errorf("URL alone sent %s %s, want GET /plain", s.method, s.path)
	}
	if err := mustHTTP(t, "DELETE "+srv.URL+"/x").Run(context.Background()); err != nil {
		t.Errorf("METHOD URL form: %v", err)
	}
	if s := <-got; s.method != "DELETE" {
		t.Errorf("METHOD URL sent %s, want DELETE", s.method)
	}
}

func TestHTTPHookFailureStatus(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "agent unavailable "+strings.Repeat("z", 10000), http.StatusInternalServerError)
	}))
	defer srv.Close()
	err := mustHTTP(t, "POST "+srv.URL+"/deregister").Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "500 Internal Server Error") ||
		!strings.Contains(err.Error(), "agent unavailable") || !strings.Contains(err.Error(), `"offline-http"`) {
		t.Fatalf("Run = %v, want the name, the status and the start of the body", err)
	}
	if len(err.Error()) > 2*errSnippet+200 {
		t.Errorf("error of %d bytes: the body is not capped", len(err.Error()))
	}
}

func TestHTTPHookConnectionRefused(t *testing.T) {
	t.Parallel()
	addr, _ := closedAddr(t)
	err := mustHTTP(t, "http://"+addr+"/deregister").Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Run = %v, want connection refused", err)
	}
}

func TestHTTPHookTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)

	const timeout = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := mustHTTP(t, srv.URL).Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after") {
		t.Errorf("Run = %v, want a timeout", err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("Run returned after %v, before the %v timeout", took, timeout)
	}
}
