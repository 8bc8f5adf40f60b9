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

	"github.com/drainit/drainit/integration/testenv"
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
	p, err := parseProbe("tcp://" + addr)
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
	if buf.find(t, map[string]any{"message": "ready probe passed", "probe": "tcp://" + addr}) == nil {
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
	p, err := parseProbe(srv.URL + "/healthz")
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
	p, err := parseProbe("tcp://" + addr)
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
		p, err := parseProbe(spec)
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

// TestWaitReadyWarns: a probe that keeps failing (a wrong port) is a warning after warnFirst, with
// the last attempt's error, and then every warnEvery; failed attempts alone are debug lines, and
// the wait was silent at info for ever.
func TestWaitReadyWarns(t *testing.T) {
	t.Parallel()
	addr, _ := closedAddr(t)
	p, err := parseProbe("tcp://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	log, buf := newLog()
	tm := defaultTiming
	tm.warnFirst, tm.warnEvery = 200*time.Millisecond, 400*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- waitReady(ctx, p, log, tm) }()
	warning := map[string]any{"level": "warn", "probe": "tcp://" + addr}
	waitFor(t, "two warnings", func() bool { return len(buf.findAll(t, warning)) >= 2 })
	cancel()
	if err := result(t, done); err == nil {
		t.Fatal("WaitReady = nil, want the cancellation")
	}
	ws := buf.findAll(t, warning)
	for i, w := range ws {
		if e, _ := w["error"].(string); !strings.Contains(e, "connection refused") {
			t.Errorf("warning %d says %v, want the last attempt's error", i, w)
		}
		// The pause between attempts (at most tm.max) is the warnings' granularity.
		waited := time.Duration(w["waited"].(float64)) * time.Millisecond
		if want := tm.warnFirst + time.Duration(i)*tm.warnEvery; waited < want || waited > want+tm.max+tm.timeout {
			t.Errorf("warning %d after %v, want %v (+ one attempt and pause)", i, waited, want)
		}
	}
	if len(ws) > int(time.Since(start)/tm.warnEvery)+1 {
		t.Errorf("%d warnings in %v, want one per %v", len(ws), time.Since(start), tm.warnEvery)
	}
}

// TestWatchReady: once ready, an app whose probe fails `failures` times in a row is reported not
// ready (fewer failures are not), and ready again at the next passing check; nothing is reported
// after ctx ends. Readiness used to be for good once the probe had passed.
func TestWatchReady(t *testing.T) {
	t.Parallel()
	p := &testenv.SwitchProbe{}
	p.Ok.Store(true)
	log, buf := newLog()
	reports := make(chan bool, 8)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		WatchReady(ctx, p, log, 5*time.Millisecond, 3, func(r bool) { reports <- r })
	}()
	next := func() bool {
		t.Helper()
		select {
		case r := <-reports:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no report")
			return false
		}
	}
	waitFor(t, "checks that pass", func() bool { return p.Checks.Load() >= 3 })
	p.Ok.Store(false)
	failedFrom := p.Checks.Load()
	if next() {
		t.Fatal("reported ready, want not ready")
	}
	// The failing checks: at least 3 (one may have been under way when the probe switched).
	if n := p.Checks.Load() - failedFrom; n < 2 || n > 4 {
		t.Errorf("not ready after %d checks, want 3 failed in a row", n)
	}
	if buf.find(t, map[string]any{"level": "warn", "error": "refused", "failed": float64(3)}) == nil {
		t.Errorf("no warning with the error and the failures:\n%s", buf)
	}
	p.Ok.Store(true)
	if !next() {
		t.Fatal("reported not ready, want ready again")
	}
	// One or two failures in a row are not enough.
	for range 3 {
		p.Ok.Store(false)
		n := p.Checks.Load()
		waitFor(t, "a failed check", func() bool { return p.Checks.Load() > n })
		p.Ok.Store(true)
		n = p.Checks.Load()
		waitFor(t, "a passing check", func() bool { return p.Checks.Load() > n+1 })
	}
	cancel()
	<-done
	select {
	case r := <-reports:
		t.Errorf("reported %v after single failures or the end of ctx", r)
	default:
	}
}

// TestReached: the adaptive drain leaves out the probe's attempts that connected to the app, and
// only those.
func TestReached(t *testing.T) {
	t.Parallel()
	addr, _ := closedAddr(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	for spec, want := range map[string]bool{"tcp://" + addr: false, "http://" + addr + "/": false,
		"http://" + srv.Listener.Addr().String() + "/": true, "tcp://" + srv.Listener.Addr().String(): true} {
		p, err := parseProbe(spec)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Check(context.Background())
		if got := Reached(err); got != want {
			t.Errorf("%s: Reached(%v) = %v, want %v", spec, err, got, want)
		}
	}
}

// TestLocalTarget: where a probe's connection lands, when that is this network namespace.
func TestLocalTarget(t *testing.T) {
	for in, want := range map[string]string{
		":8080": "127.0.0.1:8080", "localhost:80": "127.0.0.1:80", "app.localhost.:80": "127.0.0.1:80",
		"0.0.0.0:80": "127.0.0.1:80", "[::]:80": "[::1]:80", "[::1]:80": "[::1]:80", "127.0.0.2:80": "127.0.0.2:80",
		"[::ffff:127.0.0.1]:80": "127.0.0.1:80", "app:80": "", "192.0.2.1:80": "", "x": "",
	} {
		got, ok := localTarget(in)
		if s := got.String(); ok != (want != "") || ok && s != want {
			t.Errorf("localTarget(%q) = %v, %v; want %q", in, got, ok, want)
		}
	}
}
