package integration

import (
	"strings"
	"testing"
	"time"
)

// TestForkLoopEnded: a daemon the app leaves behind that forks on and on, each process exiting as
// soon as it has forked the next, and ignores SIGTERM, is ended by the SIGKILL after
// --cleanup-wait: drainit exits with the app's status, nothing it started outlives it (the
// harness's wait checks that no process holds drainit's stdout or stderr), and it never gives up
// on the reaper. As a subreaper drainit finds such a process by walking /proc, where the pid it
// found has gone by the time the SIGKILL comes; before, three such walks missed it, drainit gave
// up after a second and exited with the loop still forking (26-36 of its processes left each time
// on a machine of 78 processes).
func TestForkLoopEnded(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		// The loop stops by itself after forkFor, should drainit fail to end it: longer than
		// drainit's reaping wait (a second) and the harness's wait for drainit's output to close.
		const forkFor = 2*time.Second + drainTimeout
		d := startIn(t, m, []string{"--cleanup-wait", "100ms"},
			app("daemon", "-ignore-term", "-fork-loop", forkFor.String())...)
		d.stdout.AwaitPID(t, waitTimeout, "daemon")
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0 (the app's status)\n%s", got, d.dump())
		}
		for _, e := range d.logs() {
			if strings.HasPrefix(e.msg(), "processes survive SIGKILL") {
				t.Errorf("drainit gave up on the fork loop: %q\n%s", e.msg(), d.dump())
			}
		}
	})
}
