package integration

import (
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestSurvivorsNamed: when something survives drainit's SIGKILL, drainit says what and why
// before it goes on without it. Here the test traces the app, and never collects the exit that
// the app's SIGKILL reports to its tracer first: drainit cannot reap the app and gives up before
// the deadline (0.5 s before it: it used to wait for the deadline itself, where the runtime's
// SIGKILL lands), with exit status 137, and its summary as the last line. Before, it blamed "uninterruptible sleep?" whatever the cause
// (the same words for a fork loop it had missed, a tracer, or a process it may not signal).
func TestSurvivorsNamed(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		t.Parallel()
		// SIGKILL at 1 s; the reaper waited for until 2.5 s (1 s at least after the SIGKILL).
		const grace = 3000 // ms
		d := startIn(t, m, []string{"--drain-delay", "0", "--grace-period", "3s", "--kill-margin", "2s"}, app("signals")...)
		d.stdout.AwaitPID(t, waitTimeout, "ready app")
		appPID := d.appPID()
		// ptrace requests must come from the thread that attached.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := syscall.PtraceAttach(appPID); err != nil {
			t.Fatalf("tracing the app: %v", err)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(appPID, &ws, syscall.WALL, nil); err != nil || !ws.Stopped() {
			t.Fatalf("the attach's stop: %v, %v", ws, err)
		}
		// Collected at the end, as the tracer must, whatever happens: as PID 1 drainit's own exit
		// waits for every process of its namespace to be reaped, the app included.
		collect := func() { _, _ = syscall.Wait4(appPID, &ws, syscall.WALL, nil) }
		defer func() { _, _ = syscall.Wait4(appPID, &ws, syscall.WALL|syscall.WNOHANG, nil) }()
		d.signal(syscall.SIGTERM)
		d.stderr.AwaitContains(t, waitTimeout, "what survives SIGKILL")
		collect()
		if got := d.wait(waitTimeout); got != (exitStatus{code: 128 + 9}) {
			t.Fatalf("drainit: %v, want exit 137 (the app SIGKILLed)\n%s", got, d.dump())
		}
		var survivors []any
		for _, e := range d.logs() {
			if e.msg() == "what survives SIGKILL" {
				survivors, _ = e["survivors"].([]any)
				if ms, _ := e.int("elapsed"); ms >= grace {
					t.Errorf("drainit gave up on the survivors %d ms after the trigger: not before the deadline (%d ms)", ms, grace)
				}
			}
		}
		if len(survivors) != 1 {
			t.Fatalf("want the app as the one survivor, got %v\n%s", survivors, d.dump())
		}
		// The summary stays the last line, where a log collector looks for it.
		if logs := d.logs(); logs[len(logs)-1].msg() != "drainit exiting" {
			t.Errorf("drainit's last line is %q, want \"drainit exiting\"\n%s", logs[len(logs)-1].msg(), d.dump())
		}
		// As PID 1 drainit's /proc numbers the app its own way, and cannot see the tracer
		// outside its namespace; as a subreaper it names the test's thread that traces.
		want := "has exited, but its exit has not come to drainit"
		if m == subreaper {
			want = "has exited, but its tracer (pid " + strconv.Itoa(syscall.Gettid()) + ") has not collected its exit"
		}
		if s, _ := survivors[0].(string); !strings.Contains(s, want) {
			t.Errorf("survivor %q, want it to say %q", s, want)
		}
	})
}
