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

// TestPostStopHooksAfterSIGKILL: post-stop hooks must end half a second before the deadline, the
// time drainit keeps to SIGKILL an exec hook's processes and exit before the runtime's SIGKILL.
// After drainit had to SIGKILL the app at the kill point, the hooks therefore get the kill margin
// less 0.5 s, as the README says: 1.5 s with the default 2 s, none with 0.5 s.
func TestPostStopHooksAfterSIGKILL(t *testing.T) {
	for _, c := range []struct {
		margin string
		ran    bool
	}{{"2s", true}, {"500ms", false}} {
		t.Run("kill margin "+c.margin, func(t *testing.T) {
			t.Parallel()
			d := start(t, spec{mode: subreaper, app: app("ignore-term"), args: []string{"--grace-period", "4s",
				"--drain-delay", "0", "--kill-margin", c.margin, "--log-format", "json",
				"--post-stop-exec", `["/bin/sh","-c","echo post-stop ran"]`}})
			d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
			d.signal(syscall.SIGTERM)
			if got := d.wait(waitTimeout); got != (exitStatus{code: 128 + 9}) {
				t.Fatalf("drainit: %v, want 137 (the app SIGKILLed)\n%s", got, d.dump())
			}
			ran, skipped := false, false
			for _, e := range d.logs() {
				ran = ran || (e.str("hook") == "post-stop-exec" && e.msg() == "post-stop ran")
				skipped = skipped || (e.str("hook") == "post-stop-exec" && e.msg() == "hook skipped: no time left")
			}
			if ran != c.ran || skipped == c.ran {
				t.Errorf("kill margin %s: the post-stop hook ran %v, skipped %v; want ran %v\n%s", c.margin, ran, skipped, c.ran, d.dump())
			}
		})
	}
}
