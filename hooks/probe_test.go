package hooks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
