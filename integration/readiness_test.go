package integration

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/hooks"
	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
)

// TestReadinessFollowsTheProbe: once the app is ready, /readyz follows its ready probe as the
// kubelet's own readiness probe would: 503 once hooks.WatchFailures attempts in a row have
// failed, 200 at the next that passes, and 503 for good from the trigger on, with no probe after
// it. It used to stay 200 whatever the app did, while the README has the kubelet probe /readyz
// rather than the app.
func TestReadinessFollowsTheProbe(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		var mu sync.Mutex
		status, failed, probes := http.StatusOK, 0, 0
		var failingSince time.Time
		appSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			probes++
			if status != http.StatusOK {
				failed++
			}
			w.WriteHeader(status)
		}))
		defer appSrv.Close()
		set := func(code int) {
			mu.Lock()
			defer mu.Unlock()
			status, failed, failingSince = code, 0, time.Now()
		}
		ctl := testenv.FreeLoopbackAddr(t)
		d := startIn(t, m, []string{"--http-addr", ctl, "--ready-probe", appSrv.URL + "/healthz",
			"--grace-period", "20s", "--drain-delay", "1s"}, app("sleep", "1h")...)
		readyz := func() int {
			resp, err := http.Get("http://" + ctl + "/readyz")
			if err != nil {
				return 0
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		await := func(code int, within time.Duration) time.Duration {
			t.Helper()
			start := time.Now()
			for readyz() != code {
				if time.Since(start) > within {
					t.Fatalf("/readyz never answered %d within %v\n%s", code, within, d.dump())
				}
				time.Sleep(pollEvery)
			}
			return time.Since(start)
		}
		await(200, waitTimeout)

		// Failing: 503 after WatchFailures failed attempts, WatchEvery apart (one period of
		// slack for the attempt under way when the app changed, and one for a loaded machine).
		set(http.StatusServiceUnavailable)
		bound := time.Duration(hooks.WatchFailures+2) * hooks.WatchEvery
		await(503, bound)
		mu.Lock()
		n, took := failed, time.Since(failingSince)
		mu.Unlock()
		if n < hooks.WatchFailures {
			t.Errorf("/readyz 503 after %d failed probes (%v), want %d in a row", n, took, hooks.WatchFailures)
		}
		// Passing again: 200 at the next attempt.
		set(http.StatusOK)
		await(200, 2*hooks.WatchEvery+time.Second)

		// Failing once more, then the trigger: readiness never comes back, and the probe stops.
		set(http.StatusServiceUnavailable)
		await(503, bound)
		d.signal(syscall.SIGTERM)
		d.stderr.AwaitLine(t, waitTimeout, "the stop sequence", lines.Containing("stop sequence started"))
		mu.Lock()
		status, before := http.StatusOK, probes
		mu.Unlock()
		// The drain lasts 1s, WatchEvery or more: a probe still going on would pass in it.
		d.stderr.AwaitLine(t, waitTimeout, "the stop signal", lines.Containing("stop signal sent"))
		if c := readyz(); c == 200 {
			t.Error("/readyz 200 after the trigger")
		}
		mu.Lock()
		after := probes - before
		mu.Unlock()
		if after > 1 {
			t.Errorf("%d probes after the trigger, want none (one under way at most)", after)
		}
		if got := d.wait(waitTimeout); got.code != 143 && got.code != 0 {
			t.Errorf("drainit: %v\n%s", got, d.dump())
		}
	})
}

// TestReadyProbeOnAnotherProcessPort: a ready probe that passes on a port some other process
// listens on (here the test itself; a sidecar sharing the pod's network, a previous instance)
// makes /readyz follow that process. drainit says so in a warning; it said nothing. An app that
// listens there itself gets no warning.
func TestReadyProbeOnAnotherProcessPort(t *testing.T) {
	const warning = "a process drainit did not start listens on"
	eachMode(t, func(t *testing.T, m mode) {
		other, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		d := startIn(t, m, []string{"--drain-delay", "0s", "--ready-probe", "tcp://" + other.Addr().String()}, app("sleep", "1h")...)
		d.stderr.AwaitLine(t, waitTimeout, "the warning", lines.Containing(warning))
		d.signal(syscall.SIGTERM)
		d.wait(waitTimeout)

		addr := testenv.FreeLoopbackAddr(t)
		d = startIn(t, m, []string{"--drain-delay", "0s", "--ready-probe", "tcp://" + addr}, app("serve", "-addr", addr)...)
		d.stderr.AwaitLine(t, waitTimeout, "readiness", lines.Containing(`"app ready"`))
		d.signal(syscall.SIGTERM)
		d.wait(waitTimeout)
		if n := d.stderr.Count(lines.Containing(warning)); n != 0 {
			t.Errorf("warned of another process with the app on the port\n%s", d.dump())
		}
	})
}
