package integration

import (
	"syscall"
	"testing"
)

// TestStopSequenceEventsCarryPhaseAndElapsed: the README promises that every event of the stop
// sequence carries phase and elapsed (ms since the trigger), so that a log reader can lay out
// the stop by time. The hooks' lines (their output, their outcome) are events of it too, and so
// are the debug lines (a signal forwarded during the drain), which used to have neither.
func TestStopSequenceEventsCarryPhaseAndElapsed(t *testing.T) {
	const hook = `["/bin/sh","-c","echo out; echo err >&2"]`
	for _, level := range []string{"info", "debug"} {
		t.Run(level, func(t *testing.T) {
			d := start(t, spec{mode: subreaper, app: app("signals"), args: []string{"--drain-delay", "1s",
				"--offline-exec", hook, "--post-stop-exec", hook, "--log-format", "json", "--log-level", level}})
			d.stdout.AwaitPrefix(t, waitTimeout, "ready app")
			d.signal(syscall.SIGTERM)
			if level == "debug" {
				d.stderr.AwaitContains(t, waitTimeout, `"draining: the app keeps serving"`)
				d.signal(syscall.SIGUSR1)
				d.stdout.AwaitPrefix(t, waitTimeout, "got app SIGUSR1")
			}
			if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
				t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
			}
			started, hookLines, forwarded := false, 0, 0
			for _, e := range d.logs() {
				started = started || e.msg() == "stop sequence started"
				if !started {
					continue
				}
				if e.str("hook") != "" {
					hookLines++
				}
				if e.str("signal") == "SIGUSR1" && e.str("phase") == "draining" {
					forwarded++
				}
				_, hasElapsed := e.int("elapsed")
				if e.str("phase") == "" || !hasElapsed {
					t.Errorf("a stop sequence event without phase or elapsed: %v", e)
				}
			}
			// Each hook: a line of output on stdout, one on stderr, and its outcome; at debug
			// level, its start too.
			want := map[string]int{"info": 6, "debug": 8}[level]
			if !started || hookLines != want {
				t.Fatalf("stop sequence started: %v, %d lines of the hooks, want %d\n%s", started, hookLines, want, d.dump())
			}
			if level == "debug" && forwarded == 0 {
				t.Errorf("no debug line of SIGUSR1 forwarded during the drain\n%s", d.dump())
			}
		})
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
