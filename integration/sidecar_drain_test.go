package integration

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/signals"
)

// TestAdaptiveAutoBesideASidecar: the real servers (haproxy's worker, httpd's event MPM
// children) under drainit with --drain-quiet auto, in a network namespace shared with a sidecar:
// a listener of another process (here the test's own, as a mesh proxy's or an exporter's would
// be), with traffic of its own that goes on through the whole stop, as a native sidecar's does.
// New connections come to the app at 100 a second from 3 s before the trigger until the
// propagation delay D after it. The namespace's PassiveOpens counter counts the sidecar's
// connections too, so the drain counts with sock-diag, and it used to judge only its own few
// arrivals: with fewer than 20 it waited for --drain-max. Now the history of the app's own
// listeners gives it the rate: the drain ends quiet a fraction of a second after D, every request
// answered, and the log names the app's listener as watched and the sidecar's as not. (haproxy
// with --drain-ports: its master's CLI socket is a UNIX listener, which makes the drain fixed.)
func TestAdaptiveAutoBesideASidecar(t *testing.T) {
	const (
		rate     = 100
		warmup   = 3 * time.Second
		d        = 300 * time.Millisecond
		drainMax = 10 * time.Second
	)
	eachRealApp(t, func(t *testing.T, a realApp, bin string) {
		var sidecarHits atomic.Int64
		sidecar := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sidecarHits.Add(1) }))
		t.Cleanup(sidecar.Close)
		addr := testenv.FreeLoopbackAddr(t)
		args := []string{"--stop-signal", signals.Name(a.stopSig), "--drain", "adaptive", "--drain-quiet", "auto",
			"--drain-max", drainMax.String(), "--grace-period", "30s"}
		if a.name == "haproxy" {
			// Its master's CLI socket (-S) is a UNIX listener the drain cannot watch: drainit
			// says so and names --drain-ports, which then says what is routed to the pod.
			args = append(args, "--drain-ports", addr)
		}
		r := startRealAt(t, a, bin, addr, nil, args...)

		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		var (
			mu       sync.Mutex
			failures []string
			sent     int
			trigger  time.Time
		)
		until := make(chan time.Time, 1) // when the app's traffic stops: D after the trigger
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Second / rate) // the load's pace, not a synchronisation
			defer tick.Stop()
			var stop time.Time
			var wg sync.WaitGroup
			for now := range tick.C {
				select {
				case stop = <-until:
				default:
				}
				if !stop.IsZero() && now.After(stop) {
					break
				}
				mu.Lock()
				sent++
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ans := get(r.url("/")); ans.err != nil || ans.status != http.StatusOK {
						mu.Lock()
						failures = append(failures, ans.String())
						mu.Unlock()
					}
				}()
				go func() { // the sidecar's own traffic, a connection each
					if resp, err := client.Get(sidecar.URL); err == nil {
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
		}()
		time.Sleep(warmup) // the pod in service before its deletion: the load runs meanwhile
		trigger = time.Now()
		r.signal(syscall.SIGTERM)
		until <- trigger.Add(d)
		<-done
		stop := r.awaitEvent(t, "stop signal sent")
		r.up.answer()
		st := r.wait(waitTimeout)

		mu.Lock()
		defer mu.Unlock()
		if len(failures) > 0 {
			t.Errorf("%d of %d requests to the app failed, want none: %v\n%s", len(failures), sent, failures[:min(5, len(failures))], r.dump())
		}
		over := only(t, r.drainitRun, "adaptive drain over")
		found := only(t, r.drainitRun, "adaptive drain: listeners found")
		t.Logf("%s: %d requests, the sidecar had %d; %v; %v", a.name, sent, sidecarHits.Load(), found, over)
		if over.str("reason") != "quiet" || over.str("method") != "sock-diag" || over.str("history_from") != "app-listeners" {
			t.Errorf("drain ended by %q with %q, history from %q: want quiet, sock-diag, the app's listeners\n%s",
				over.str("reason"), over.str("method"), over.str("history_from"), r.dump())
		}
		_, port, _ := strings.Cut(sidecar.Listener.Addr().String(), ":")
		if w := found.strs("watched"); !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, r.addr) }) {
			t.Errorf("watched %q, want the app's %s", w, r.addr)
		}
		why := ": not the app's"
		if a.name == "haproxy" {
			why = ": not in --drain-ports"
		}
		if n := found.listeners("not_watched"); !slices.ContainsFunc(n, func(s string) bool { return strings.Contains(s, ":"+port+why) }) {
			t.Errorf("not watched %q, want the sidecar's port %s%s", n, port, why)
		}
		stopAt, err := stop.time()
		if err != nil {
			t.Fatal(err)
		}
		// After D, the silence 100/s needs (0.18 s) and a poll or two; a second is room for a
		// loaded machine, and far from --drain-max.
		if after := stopAt.Sub(trigger); after < d || after > d+time.Second {
			t.Errorf("stop signal sent %s after the trigger, want between D (%s) and D + 1 s", after, d)
		}
		if status := r.checkCleanEnd(t, st); status != 0 {
			t.Errorf("%s exited %d after its graceful stop, want 0", a.name, status)
		}
	})
}
