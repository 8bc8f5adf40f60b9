package integration

import (
	"syscall"
	"testing"
)

// TestStopSequenceEventsCarryPhaseAndElapsed: the README promises that every event of the stop
// sequence carries phase and elapsed (ms since the trigger), so that a log reader can lay out
// the stop by time. The hooks' lines (their output, their outcome) are events of it too.
func TestStopSequenceEventsCarryPhaseAndElapsed(t *testing.T) {
	const hook = `["/bin/sh","-c","echo out; echo err >&2"]`
	d := start(t, spec{mode: subreaper, app: app("signals"), args: []string{"--drain-delay", "0",
		"--offline-exec", hook, "--post-stop-exec", hook, "--log-format", "json"}})
	d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
	d.signal(syscall.SIGTERM)
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
	started, hookLines := false, 0
	for _, e := range d.logs() {
		started = started || e.msg() == "stop sequence started"
		if !started {
			continue
		}
		if e.str("hook") != "" {
			hookLines++
		}
		_, hasElapsed := e.int("elapsed")
		if e.str("phase") == "" || !hasElapsed {
			t.Errorf("a stop sequence event without phase or elapsed: %v", e)
		}
	}
	// Each hook: a line of output on stdout, one on stderr, and its outcome.
	if !started || hookLines != 6 {
		t.Fatalf("stop sequence started: %v, %d lines of the hooks, want 6\n%s", started, hookLines, d.dump())
	}
}
