package podman

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A container has a network namespace of its own, in which the app's listener is the only one:
// the adaptive drain then counts the namespace's accepted connections (TCP PassiveOpens), which
// misses none, however short-lived. The drain lasts while connections keep arriving and ends
// --drain-quiet after the last one, long before --drain-max; only then does the app get SIGTERM,
// and it has served every request.
func TestAdaptiveDrainEndsQuietAfterTheLastConnection(t *testing.T) {
	h := need(t)
	t.Parallel()
	const quiet, drainMax = time.Second, 20 * time.Second
	const requests, every = 10, 200 * time.Millisecond
	id := h.start(t, []string{"--env=DRAINIT_DRAIN=adaptive", "--env=DRAINIT_DRAIN_QUIET=1s",
		"--env=DRAINIT_DRAIN_MAX=20s", "--env=DRAINIT_GRACE_PERIOD=30s"},
		"--", "/testapp", "serve", "-addr", "127.0.0.1:8080", "-graceful")
	h.waitLog(t, id, "ready app", 10*time.Second)

	h.must(t, "kill", "--signal", "TERM", id)
	h.waitLog(t, id, "draining until no new connections arrive", 10*time.Second)
	// The client runs in the container: with no network set up, only its loopback reaches the app.
	out := h.must(t, "exec", id, "/testapp", "get", "-n", fmt.Sprint(requests), "-every", every.String(), "http://127.0.0.1:8080/")
	var last time.Time
	got := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var status int
		var at string
		if _, err := fmt.Sscanf(l, "got %d %s", &status, &at); err != nil || status != 200 {
			t.Fatalf("client line %q: want \"got 200 TIME\"", l)
		}
		var err error
		if last, err = time.Parse(time.RFC3339Nano, at); err != nil {
			t.Fatalf("client line %q: %v", l, err)
		}
		got++
	}
	if got != requests {
		t.Fatalf("the client made %d requests during the drain, want %d:\n%s", got, requests, out)
	}

	code, _ := h.exited(t, id)
	o := h.logs(t, id)
	if code != 0 {
		t.Errorf("container exit code %d, want 0 (the app shut down gracefully)", code)
	}
	over := o.event(t, "adaptive drain over")
	if over.Method != "passive-opens" || over.Reason != "quiet" {
		t.Errorf("adaptive drain ended by %q with %q, want \"quiet\" with \"passive-opens\" (the app's own network namespace)", over.Reason, over.Method)
	}
	switch {
	case over.NewConnections == nil:
		t.Errorf("adaptive drain over has no new_connections")
	case *over.NewConnections != requests:
		t.Errorf("adaptive drain counted %d new connections, want the client's %d", *over.NewConnections, requests)
	}
	// Both times are on the one kernel's clock. The client prints its time after each response, a
	// moment after the connection was accepted; the watcher looks every 100 ms.
	sent := o.event(t, "stop signal sent")
	if d := sent.Time.Sub(last); d < quiet-150*time.Millisecond {
		t.Errorf("stop signal sent %s after the last request, before --drain-quiet %s", d, quiet)
	} else if d > quiet+slack {
		t.Errorf("stop signal sent %s after the last request, want --drain-quiet %s (+%s)", d, quiet, slack)
	}
	if el := sent.elapsed(t); el >= drainMax {
		t.Errorf("stop signal sent %s after the trigger, not before --drain-max %s", el, drainMax)
	}
	o.appLine(t, "got app SIGTERM") // from drainit, once the drain was over
}
