package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/internal/control"
)

func TestSleep(t *testing.T) {
	var out, errb bytes.Buffer
	start := time.Now()
	if code := sleepCmd([]string{"50ms"}, nil, &out, &errb); code != 0 {
		t.Fatalf("sleep 50ms: exit %d: %s", code, errb.String())
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("sleep 50ms returned after %v", d)
	}
	if code := sleepCmd([]string{"--", "1ms"}, nil, &out, &errb); code != 0 {
		t.Errorf("sleep -- 1ms: exit %d, %q; want 0, as sleep(1)", code, errb.String())
	}
	for _, args := range [][]string{nil, {"soon"}, {"-1"}, {"1s", "2s"}, {"--help", "1s"}, {"--"}, {"--", "--", "1s"}} {
		errb.Reset()
		if code := sleepCmd(args, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "drainit sleep") {
			t.Errorf("sleep %q: exit %d, %q; want 2 with a message", args, code, errb.String())
		}
	}
	out.Reset()
	if code := sleepCmd([]string{"--help"}, nil, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "usage: drainit sleep DURATION") {
		t.Errorf("sleep --help: exit %d, %q; want 0 and the usage", code, out.String())
	}
}

// TestPrestopUsageKeepsTheTokenSecret: a preStop hook's output goes into the pod's events, which
// more people may read than the Secret the token comes from. The usage, printed on --help, and
// the one line a mistyped flag gets show no default read from the environment.
func TestPrestopUsageKeepsTheTokenSecret(t *testing.T) {
	t.Setenv("DRAINIT_HTTP_TOKEN", "s3cret-token")
	t.Setenv("DRAINIT_HTTP_ADDR", "127.0.0.1:9")
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--help"}, 0, "-token"}, {[]string{"-h"}, 0, "-token"},
		{[]string{"--help=false", "--tokn", "x"}, 2, "drainit prestop: unknown option --tokn (--token?)\n"},
		{[]string{"--tokn", "x"}, 2, "drainit prestop: unknown option --tokn (--token?)\n"},
		{[]string{"--timeout"}, 2, "drainit prestop: --timeout needs a value\n"},
	} {
		var out, errb bytes.Buffer
		code := prestopCmd(c.args, &out, &errb)
		all := out.String() + errb.String()
		if code != c.code || !strings.Contains(all, c.says) {
			t.Errorf("prestop %q: exit %d, %q; want %d and %q", c.args, code, all, c.code, c.says)
		}
		if c.code == 2 && (out.Len() > 0 || strings.Count(errb.String(), "\n") != 1) {
			t.Errorf("prestop %q: stdout %q, stderr %q; want one line on stderr", c.args, out.String(), errb.String())
		}
		if strings.Contains(all, "s3cret") || strings.Contains(all, "127.0.0.1:9") {
			t.Errorf("prestop %q printed a value from the environment: %q", c.args, all)
		}
	}
}

// drainit prestop's output becomes a pod event when it fails: a server that echoes the request
// (an --addr that is not drainit's control server) does not get the token into it, in a status
// line or in a body.
func TestPrestopHidesEchoedToken(t *testing.T) {
	const tok = "EchoedPrestopToken_4444"
	for _, answer := range []func(auth string) string{
		func(auth string) string { return "HTTP/1.1 5xx " + auth + "\r\n\r\n" },
		func(auth string) string {
			return fmt.Sprintf("HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s", len(auth), auth)
		},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			req, err := http.ReadRequest(bufio.NewReader(c))
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, answer(req.Header.Get("Authorization")))
		}()
		var out, errb bytes.Buffer
		code := prestopCmd([]string{"--addr", ln.Addr().String(), "--token", tok}, &out, &errb)
		ln.Close()
		if code != 1 || strings.Contains(out.String()+errb.String(), tok) || !strings.Contains(errb.String(), "xxxxx") {
			t.Errorf("exit %d, %q; want 1 and the token hidden", code, out.String()+errb.String())
		}
	}
}

func TestPrestop(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header
		if r.URL.Path != "/prestop" || r.Method != "POST" {
			w.WriteHeader(404)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(401)
			w.Write([]byte("unauthorized\n"))
			return
		}
		w.Write([]byte(`{"phase":"drained"}` + "\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	var out, errb bytes.Buffer
	if code := prestopCmd([]string{"--addr", addr, "--token", "tok"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"phase":"drained"`) || got.Get("Authorization") != "Bearer tok" {
		t.Errorf("stdout %q, Authorization %q", out.String(), got.Get("Authorization"))
	}
	// drainit takes the call for the kubelet's preStop hook, which `drainit prestop` is the exec
	// form of (a stop signal while it waits then says the pod's grace period is over).
	if ua := got.Get("User-Agent"); !control.FromKubelet(ua) {
		t.Errorf("User-Agent %q: drainit's control server does not take it for the kubelet's", ua)
	}
	// The token from the environment, as in a container.
	t.Setenv("DRAINIT_HTTP_TOKEN", "tok")
	t.Setenv("DRAINIT_HTTP_ADDR", addr)
	if code := prestopCmd(nil, &out, &errb); code != 0 {
		t.Fatalf("from the environment: exit %d: %s", code, errb.String())
	}
	// Refused by the server: non-zero, so that the kubelet records FailedPreStopHook.
	errb.Reset()
	if code := prestopCmd([]string{"--token", "wrong"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "401") {
		t.Errorf("wrong token: exit %d, %q", code, errb.String())
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := ln.Addr().String()
	ln.Close()
	errb.Reset()
	if code := prestopCmd([]string{"--addr", down}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "refused") {
		t.Errorf("server down: exit %d, %q", code, errb.String())
	}
	for _, args := range [][]string{{"--timeout", "x"}, {"extra"}, {"--nope"}} {
		errb.Reset()
		if code := prestopCmd(args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}

func TestDefaultControlAddr(t *testing.T) {
	for in, want := range map[string]string{
		"": "127.0.0.1:8099", ":8099": "127.0.0.1:8099", "0.0.0.0:9000": "127.0.0.1:9000",
		"[::]:8099": "[::1]:8099", "10.0.0.5:8099": "10.0.0.5:8099",
	} {
		if got := defaultControlAddr(in); got != want {
			t.Errorf("defaultControlAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPrestopTokenAsDrainitReadsIt: drainit prestop reads the token as drainit does, so the two
// agree: a Secret file's last newline is trimmed (the request carries the token without it and
// is let in), and a token drainit refuses is refused here, with exit 2, without printing it.
func TestPrestopTokenAsDrainitReadsIt(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		if got != "Bearer s3cret" {
			w.WriteHeader(401)
			return
		}
		w.Write([]byte(`{"phase":"drained"}` + "\n"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, c := range []struct {
		name, env string
		args      []string
		from      string
	}{
		{"variable", "s3cret\n", []string{"--addr", addr}, "DRAINIT_HTTP_TOKEN"},
		{"flag", "", []string{"--addr", addr, "--token", "s3cret\r\n"}, "--token"},
	} {
		t.Setenv("DRAINIT_HTTP_TOKEN", c.env)
		var out, errb bytes.Buffer
		got = ""
		if code := prestopCmd(c.args, &out, &errb); code != 0 || got != "Bearer s3cret" {
			t.Errorf("%s: exit %d, server got %q, stderr %q", c.name, code, got, errb.String())
		}
		if !strings.HasPrefix(errb.String(), "drainit prestop: "+c.from+": the whitespace around the token") {
			t.Errorf("%s: stderr %q does not say the token was trimmed", c.name, errb.String())
		}
	}
	t.Setenv("DRAINIT_HTTP_TOKEN", "")
	for _, tok := range []string{"s3 cret", "s3cret\nX-Other: 1", "\n"} {
		var out, errb bytes.Buffer
		got = ""
		code := prestopCmd([]string{"--addr", addr, "--token", tok}, &out, &errb)
		if code != 2 || got != "" {
			t.Errorf("--token %q: exit %d, server got %q; want 2 and no request", tok, code, got)
		}
		if msg := errb.String(); !strings.HasPrefix(msg, "drainit prestop: --token: ") || strings.Count(msg, "\n") != 1 || strings.Contains(msg, "cret") {
			t.Errorf("--token %q: stderr %q, want one line naming --token, not the token", tok, msg)
		}
	}
}

// TestPrestopAddrIsHostPort: --addr is pasted into the URL; a "/", "?" or "#" in it would send
// the call elsewhere than /prestop (POST /x?/prestop), so it is refused with exit 2.
func TestPrestopAddrIsHostPort(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:18200/x?", "127.0.0.1:18200#", "127.0.0.1", "h:0", "h:99999", "u@h:1", "a b:1", ":8099"} {
		var out, errb bytes.Buffer
		if code := prestopCmd([]string{"--addr", addr}, &out, &errb); code != 2 || !strings.HasPrefix(errb.String(), "drainit prestop: --addr ") {
			t.Errorf("--addr %q: exit %d, %q; want 2 naming --addr", addr, code, errb.String())
		}
	}
	for _, addr := range []string{"[::1]:1", "localhost:1", "10.0.0.1:8099"} {
		if err := checkDialAddr(addr); err != nil {
			t.Errorf("--addr %q refused: %v", addr, err)
		}
	}
}

// TestPrestopAnswerShownAsText: what the server answers goes into the hook's output (the pod's
// events) and maybe a terminal: its control characters are escaped, so it can neither drive
// the terminal nor forge a line.
func TestPrestopAnswerShownAsText(t *testing.T) {
	for _, status := range []int{200, 302} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			w.Write([]byte("\x1b]0;pwned\x07\x1b[2J ok\nforged line\r\xff"))
		}))
		var out, errb bytes.Buffer
		code := prestopCmd([]string{"--addr", strings.TrimPrefix(srv.URL, "http://")}, &out, &errb)
		srv.Close()
		all := out.String() + errb.String()
		if strings.ContainsAny(all, "\x1b\x07\r") || strings.Count(all, "\n") != 1 || !strings.Contains(all, `\x1b]0;pwned`) {
			t.Errorf("status %d: exit %d, output %q: want one line, control characters escaped", status, code, all)
		}
		if status == 302 && (code != 1 || !strings.HasPrefix(errb.String(), "drainit prestop: status 302: ")) {
			t.Errorf("status 302: exit %d, %q", code, errb.String())
		}
	}
}
