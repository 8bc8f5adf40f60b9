package hooks

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// notReadyYet waits until WaitReady has logged a failed attempt, and checks it has not returned.
func notReadyYet(t *testing.T, buf *logBuf, done <-chan error) {
	t.Helper()
	waitFor(t, "a failed probe attempt", func() bool {
		return buf.find(t, map[string]any{"message": "app not ready yet"}) != nil
	})
	select {
	case err := <-done:
		t.Fatalf("WaitReady returned %v before the app was ready", err)
	default:
	}
}

func TestWaitReadyTCP(t *testing.T) {
	t.Parallel()
	addr, listen := closedAddr(t)
	p, err := ParseProbe("tcp://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	log, buf := newLog()
	done := make(chan error, 1)
	go func() { done <- WaitReady(context.Background(), p, log) }()
	notReadyYet(t, buf, done)

	listen()
	if err := result(t, done); err != nil {
		t.Errorf("WaitReady = %v once the port listens", err)
	}
	if buf.find(t, map[string]any{"message": "app ready", "probe": "tcp://" + addr}) == nil {
		t.Errorf("readiness not logged:\n%s", buf)
	}
}

func TestWaitReadyHTTP(t *testing.T) {
	t.Parallel()
	var ready atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	p, err := ParseProbe(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	log, buf := newLog()
	done := make(chan error, 1)
	go func() { done <- WaitReady(context.Background(), p, log) }()
	notReadyYet(t, buf, done)
	if ev := buf.find(t, map[string]any{"message": "app not ready yet"}); !strings.Contains(ev["error"].(string), "503") {
		t.Errorf("failed attempt logged as %v, want the 503", ev)
	}
	ready.Store(true)
	if err := result(t, done); err != nil {
		t.Errorf("WaitReady = %v once the app answers 200", err)
	}
}

func TestWaitReadyGivesUpWithCtx(t *testing.T) {
	t.Parallel()
	addr, _ := closedAddr(t)
	p, err := ParseProbe("tcp://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	log, _ := newLog()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = WaitReady(ctx, p, log)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("WaitReady = %v, want the deadline and the last attempt's error", err)
	}
}

// TestProbeLocalhostWithoutLookup: localhost and names under .localhost are loopback (RFC 6761)
// whatever the resolver says; an image FROM scratch run without /etc/hosts sent "localhost" to
// DNS, and a name under .localhost goes there even with one.
func TestProbeLocalhostWithoutLookup(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	probes := []string{"tcp://drainit-probe.localhost:" + port, "http://drainit-probe.LOCALHOST.:" + port + "/"}
	if ln6, err := net.Listen("tcp6", "[::1]:0"); err == nil { // an app on ::1 alone
		defer ln6.Close()
		probes = append(probes, "tcp://drainit-probe.localhost:"+strconv.Itoa(ln6.Addr().(*net.TCPAddr).Port))
	}
	for _, spec := range probes {
		p, err := ParseProbe(spec)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.Check(ctx); err != nil {
			t.Errorf("%s: %v, want ready", spec, err)
		}
		cancel()
	}
}
