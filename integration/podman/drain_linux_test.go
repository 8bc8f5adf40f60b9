package podman

import (
	"bufio"
	"fmt"
	"os/exec"
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
	const requests, every = 15, 200 * time.Millisecond
	id := h.start(t, []string{"--env=DRAINIT_DRAIN=adaptive", "--env=DRAINIT_DRAIN_QUIET=1s",
		"--env=DRAINIT_DRAIN_MAX=20s", "--env=DRAINIT_GRACE_PERIOD=30s"},
		"--", "/testapp", "serve", "-addr", "127.0.0.1:8080", "-graceful")
	h.waitLog(t, id, "ready app", 10*time.Second)

	// The client runs in the container (with no network set up, only its loopback reaches the
	// app), and is under way before the trigger: a `podman exec` can take longer to start than
	// the quiet period on a busy machine, and the drain would rightly end before it came.
	client := exec.Command(h.bin, "exec", id, "/testapp", "get", "-n", fmt.Sprint(requests), "-every", every.String(), "http://127.0.0.1:8080/")
	client.Env, client.Dir = h.env, h.root
	stdout, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var clientErr strings.Builder
	client.Stderr = &clientErr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	var times []time.Time
	read := func(l string) {
		t.Helper()
		var status int
		var at string
		if _, err := fmt.Sscanf(l, "got %d %s", &status, &at); err != nil || status != 200 {
			t.Fatalf("client line %q: want \"got 200 TIME\"", l)
		}
		ts, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			t.Fatalf("client line %q: %v", l, err)
		}
		times = append(times, ts)
	}
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatalf("the client printed nothing: %v\n%s", client.Wait(), clientErr.String())
	}
	read(sc.Text())
	h.must(t, "kill", "--signal", "TERM", id)
	for sc.Scan() {
		read(sc.Text())
	}
	if err := client.Wait(); err != nil || len(times) != requests {
		t.Fatalf("the client: %v, %d of %d requests answered\n%s", err, len(times), requests, clientErr.String())
	}
	last := times[len(times)-1]

	code, _ := h.exited(t, id)
	o := h.logs(t, id)
	if code != 0 {
		t.Errorf("container exit code %d, want 0 (the app shut down gracefully)", code)
	}
	over := o.event(t, "adaptive drain over")
	if over.Method != "passive-opens" || over.Reason != "quiet" {
		t.Errorf("adaptive drain ended by %q with %q, want \"quiet\" with \"passive-opens\" (the app's own network namespace)", over.Reason, over.Method)
	}
	// Every request answered after the drain's baseline (taken before "listeners found" is
	// logged) is counted, and none answered before the trigger; a request a moment after the
	// trigger may have connected before the baseline.
	found, started := o.event(t, "adaptive drain: listeners found"), o.event(t, "stop sequence started")
	after := func(at time.Time) (n int) {
		for _, ts := range times {
			if ts.After(at) {
				n++
			}
		}
		return n
	}
	switch least, most := after(found.Time), after(started.Time); {
	case most == 0:
		t.Fatalf("the client's last request came before the trigger: nothing was drained")
	case over.NewConnections == nil:
		t.Errorf("adaptive drain over has no new_connections")
	case *over.NewConnections < least || *over.NewConnections > most:
		t.Errorf("adaptive drain counted %d new connections, want the client's %d to %d made during the drain", *over.NewConnections, least, most)
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
