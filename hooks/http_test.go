package hooks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/http1"
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
	h, err := parseHTTP("offline-http", spec)
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

// An answer with more header fields than drainit reads (10 KiB of cookies from a gateway in
// front of the service) is judged by its status: a 2xx is a success, and a failure says its
// status and that its body went unread.
func TestHTTPHookLargeHeaderFields(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusOK, http.StatusServiceUnavailable} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for i := range 20 {
				w.Header().Add("Set-Cookie", fmt.Sprintf("c%d=%s", i, strings.Repeat("v", 500)))
			}
			w.WriteHeader(code)
			fmt.Fprint(w, "deregistered")
		}))
		err := mustHTTP(t, "POST "+srv.URL+"/deregister").Run(context.Background())
		srv.Close()
		switch {
		case code == http.StatusOK && err != nil:
			t.Errorf("200 with 10 KiB of header fields: %v, want success", err)
		case code != http.StatusOK && (err == nil || !strings.Contains(err.Error(), "503 Service Unavailable") ||
			!strings.Contains(err.Error(), "body was not read")):
			t.Errorf("503 with 10 KiB of header fields: %v, want the status and why no body", err)
		}
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
	start := time.Now() // before the deadline is set, which then comes no sooner than timeout after
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := mustHTTP(t, srv.URL).Run(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "timed out after") {
		t.Errorf("Run = %v, want a timeout", err)
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("Run returned after %v, before the %v timeout", took, timeout)
	}
}

// holdingServer answers every connection with answer once the request head has come, then holds
// the connection open, sending nothing more, until the test ends. It returns the server's URL.
func holdingServer(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	end := make(chan struct{})
	t.Cleanup(func() { close(end); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(c, answer)
				<-end
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/x"
}

// A 2xx answer is success as soon as its head has come: a body that never ends (a stream, a
// length never filled, no length on a connection kept open) does not hold a hook or the probe
// until its deadline.
func TestHTTPSuccessNotHeldByItsBody(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	for name, answer := range map[string]string{
		"length never filled":  "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nab",
		"endless chunks":       "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n",
		"no length, kept open": "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\nab",
	} {
		u := holdingServer(t, answer)
		probe, err := parseProbe(u)
		if err != nil {
			t.Fatal(err)
		}
		for what, run := range map[string]func(context.Context) error{
			"hook": mustHTTP(t, "PUT "+u).Run, "probe": probe.Check,
		} {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			start := time.Now()
			err := run(ctx)
			took := time.Since(start)
			cancel()
			if err != nil || took > timeout/2 {
				t.Errorf("%s, %s: %v after %v; want success at once, not at the %v deadline", name, what, err, took, timeout)
			}
		}
	}
}

// A failed answer's body is still read for the error, up to the deadline when it never ends.
func TestHTTPFailureStillShowsItsBody(t *testing.T) {
	t.Parallel()
	u := holdingServer(t, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 100\r\n\r\nagent busy")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := mustHTTP(t, "PUT "+u).Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "agent busy") {
		t.Errorf("Run = %v, want the 503 and the body that came", err)
	}
}

// A malformed status line is quoted up to 200 bytes: a secret the server echoed where the cut
// falls is not shown in part (the whole one is masked, a part would not be).
func TestHTTPFailureCutStatusHidesSecret(t *testing.T) {
	t.Parallel()
	const tok = "SuperSecretToken_0123456789abcdef"
	for _, pad := range []int{188 - len(tok), 190 - len(tok), 199 - len(tok)} {
		u := holdingServer(t, "HTTP/1.1 5xx "+strings.Repeat("X", pad)+tok+"\r\n\r\n")
		h := mustHTTP(t, `{"url":"`+u+`","headers":{"Authorization":"Bearer `+tok+`"}}`)
		err := h.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), "bad status line") {
			t.Fatalf("Run = %v, want a bad status line", err)
		}
		if strings.Contains(err.Error(), tok[:6]) {
			t.Errorf("pad %d: %v shows the start of the token", pad, err)
		}
	}
}

// TestStatusInErrors: a failed call's error names the status once ("status 302 Status 302" it
// said for codes drainit has no reason phrase for), and says a redirect was not followed.
func TestStatusInErrors(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]string{
		302: "status 302 (redirects are not followed)", 418: "status 418", 503: "status 503 Service Unavailable", 600: "status 600",
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", "/elsewhere")
			w.WriteHeader(code)
		}))
		p, err := parseProbe(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		h, err := parseHTTP("online-http", srv.URL+"/")
		if err != nil {
			t.Fatal(err)
		}
		for what, err := range map[string]error{"probe": p.Check(context.Background()), "hook": h.Run(context.Background())} {
			if err == nil || !strings.HasSuffix(err.Error(), want) && !strings.Contains(err.Error(), want+":") {
				t.Errorf("%s, %d: %v, want it to end in %q", what, code, err, want)
			}
		}
		srv.Close()
	}
}

// A failed answer that echoes the request (a debugging endpoint, an error page quoting what it
// was sent) does not bring the hook's header values or body into drainit's log: the error shows
// them masked, as Redact does its configuration.
func TestHTTPFailureMasksEchoedSecrets(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(401)
		fmt.Fprintf(w, "denied: Authorization: %s; token %s; X-Api-Key=%s; body %s",
			r.Header.Get("Authorization"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.Header.Get("X-Api-Key"), b)
	}))
	defer srv.Close()
	h := mustHTTP(t, `{"method":"PUT","url":"`+srv.URL+`/x","headers":{"Authorization":"Bearer HEADERSECRET","X-Api-Key":"KEYSECRET"},"body":"BODYSECRET"}`)
	err := h.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "denied: Authorization: xxxxx") {
		t.Fatalf("Run = %v, want the 401 and the body with the secrets masked", err)
	}
	for _, secret := range []string{"HEADERSECRET", "KEYSECRET", "BODYSECRET"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows %s: %v", secret, err)
		}
	}

	// A JSON body echoed inside JSON, its quotes escaped.
	jsonEcho := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(400)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "bad request", "request": string(b)})
	}))
	defer jsonEcho.Close()
	h = mustHTTP(t, `{"method":"PUT","url":"`+jsonEcho.URL+`/x","body":"{\"token\":\"JSONSECRET\"}"}`)
	if err = h.Run(context.Background()); err == nil || strings.Contains(err.Error(), "JSONSECRET") || !strings.Contains(err.Error(), "bad request") {
		t.Errorf("Run = %v, want the 400's answer with the JSON body masked", err)
	}

	// Part of the body quoted alone, URL-encoded or HTML-escaped; the header's token likewise.
	const token = "Qk9EWVNFQ1JFVA+/=" // base64, as tokens are
	for _, echo := range []string{"token " + token + " is not valid", "next=%2Fx%3Ftoken%3DQk9EWVNFQ1JFVA%2B%2F%3D",
		`{&#34;token&#34;:&#34;` + token + `&#34;}`, "bearer t0k%2Ben%2FSECRET"} {
		e := echoing(t, echo)
		h := mustHTTP(t, `{"method":"POST","url":"`+e.URL+`/x","headers":{"Authorization":"Bearer t0k+en/SECRET"},"body":"{\"token\":\"`+token+`\"}"}`)
		err := h.Run(context.Background())
		if err == nil || strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "Qk9EWVNFQ1JFVA") {
			t.Errorf("an answer %q: Run = %v, want the secret masked", echo, err)
		}
	}

	// A malformed status line that quotes the request (http1 refuses the answer, quoting it).
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	go func() {
		c, err := raw.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		req := make([]byte, 4096)
		n, _ := c.Read(req)
		fmt.Fprintf(c, "HTTP/1.1 5000 %s\r\n\r\n", strings.ReplaceAll(string(req[:n]), "\r\n", " "))
	}()
	h = mustHTTP(t, `{"url":"http://`+raw.Addr().String()+`/d","headers":{"Authorization":"Bearer STATUSLINESECRET"}}`)
	if err := h.Run(context.Background()); err == nil || strings.Contains(err.Error(), "STATUSLINESECRET") {
		t.Errorf("a status line quoting the request: Run = %v, want the token masked", err)
	}

	// An answer cut at http1.MaxBodyBytes in the middle of a secret leaves no part of it.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		fmt.Fprint(w, strings.Repeat(" ", http1.MaxBodyBytes-5)+"CUTSECRET")
	}))
	defer cut.Close()
	h = mustHTTP(t, `{"url":"`+cut.URL+`/x","headers":{"X-Key":"CUTSECRET"}}`)
	if err := h.Run(context.Background()); err == nil || strings.Contains(err.Error(), "CUTS") {
		t.Errorf("an answer cut inside the secret: Run = %v, want its start masked", err)
	}
}

// echoing serves answers of status 403 with body.
func echoing(t *testing.T, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(403)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}
