package integration

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
)

// The stop-signal rule, on the apps that use SIGQUIT for something else than stopping: without
// --stop-signal, SIGQUIT is not a trigger, so a `kill -QUIT 1` in the container reaches the app at
// once (a JVM's thread dump, a Go goroutine dump) and starts no stop sequence. With
// --stop-signal QUIT (nginx) it does start one, and the app gets SIGQUIT after the drain.

// dumpSlack is the tolerance on top of a configured drain delay for a signal to reach the app
// and the app's line to reach the test, on a loaded two-core machine.
const dumpSlack = time.Second

// events returns drainit's log entries with the message, in order.
func events(d *drainitRun, message string) []logEntry {
	var out []logEntry
	for _, e := range d.logs() {
		if e.msg() == message {
			out = append(out, e)
		}
	}
	return out
}

// only returns the one log entry with the message; the test fails if there is none or several.
func only(t *testing.T, d *drainitRun, message string) logEntry {
	t.Helper()
	es := events(d, message)
	if len(es) != 1 {
		t.Fatalf("drainit logged %q %d times, want once\n%s", message, len(es), d.dump())
	}
	return es[0]
}

// elapsedOf is an event's time since the trigger (drainit logs it in milliseconds).
func elapsedOf(t *testing.T, e logEntry) time.Duration {
	t.Helper()
	ms, ok := e.int("elapsed")
	if !ok {
		t.Fatalf("drainit's %q event has no elapsed field: %v", e.msg(), e)
	}
	return time.Duration(ms) * time.Millisecond
}

// forwardedFirst checks that the first signal drainit forwarded to the app was sig, to its group
// or (--forward child) to it alone; that needs --log-level debug.
func forwardedFirst(t *testing.T, d *drainitRun, sig string) {
	t.Helper()
	var fwd []logEntry
	for _, e := range d.logs() {
		if m := e.msg(); m == "forwarding signal to the app's process group" || m == "forwarding signal to the app" {
			fwd = append(fwd, e)
		}
	}
	if len(fwd) == 0 || fwd[0].str("signal") != sig {
		t.Errorf("drainit's first forwarded signal: %v, want %s\n%s", fwd, sig, d.dump())
	}
}

// TestJVMThreadDumpOnQuit: a real JVM under drainit (PID 1, no --stop-signal). SIGQUIT to
// drainit reaches the JVM at once, which prints its thread dump and keeps running; nothing of the
// stop sequence starts. The SIGTERM that follows is the one trigger: drainit drains, then the JVM
// gets SIGTERM, its shutdown hook prints "shutdown" and it exits 0, drainit's status.
func TestJVMThreadDumpOnQuit(t *testing.T) {
	requireRoot(t)
	java, err := exec.LookPath("java")
	if err != nil {
		testenv.SkipUnlessCI(t, "needs a JDK 11+ (java in PATH) to run testdata/App.java from source: "+err.Error())
	}
	src, err := filepath.Abs(filepath.Join("testdata", "App.java"))
	if err != nil {
		t.Fatal(err)
	}
	t.Parallel()
	const drain = time.Second
	// No perf data: its file is named by pid in the host's /tmp, shared by JVMs in other PID
	// namespaces with the same pid. C1 only and the serial GC: the quickest start on two cores.
	d := start(t, spec{mode: pid1,
		args: []string{"--drain-delay", "1s", "--grace-period", "20s", "--log-level", "debug"},
		app:  []string{java, "-XX:-UsePerfData", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", src}})
	// The JVM takes seconds to start: waited for, with the harness's deadline.
	d.stdout.AwaitExact(t, waitTimeout, "ready")

	d.signal(syscall.SIGQUIT)
	d.stdout.AwaitLine(t, waitTimeout, "the JVM's thread dump", func(s string) bool { return strings.HasPrefix(s, "Full thread dump ") })
	// The dump is the app's own: its main thread, asleep in App.main. The dump ends with the
	// heap's summary, after the threads.
	d.stdout.AwaitLine(t, waitTimeout, "App.main in the dump", func(s string) bool { return strings.Contains(s, "at App.main(App.java:") })
	d.stdout.AwaitExact(t, waitTimeout, "Heap")
	if !d.running() {
		t.Fatalf("drainit exited after SIGQUIT\n%s", d.dump())
	}
	// Had SIGQUIT been a trigger, drainit would have logged the start a drain delay before the
	// JVM got the SIGQUIT that made this dump.
	if len(events(d, "stop sequence started")) > 0 {
		t.Fatalf("SIGQUIT started the stop sequence without --stop-signal\n%s", d.dump())
	}

	sent := time.Now()
	d.signal(syscall.SIGTERM)
	d.stdout.AwaitExact(t, waitTimeout, "shutdown")
	if got := time.Since(sent); got < drain {
		t.Errorf("the JVM shut down %s after SIGTERM, before the drain delay %s", got, drain)
	} else if got > drain+dumpSlack {
		t.Errorf("the JVM shut down %s after SIGTERM, want the drain delay %s (+%s)", got, drain, dumpSlack)
	}
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0 (the JVM's status, set by its shutdown hook)\n%s", got, d.dump())
	}

	// The stop sequence ran once, started by SIGTERM: the SIGQUIT before it started nothing.
	if trigger := only(t, d, "stop sequence started"); trigger.str("signal") != "SIGTERM" {
		t.Errorf("the stop sequence was started by %q, want SIGTERM (SIGQUIT is no trigger without --stop-signal)", trigger.str("signal"))
	}
	only(t, d, "draining: the app keeps serving")
	stop := only(t, d, "stop signal sent")
	if stop.str("signal") != "SIGTERM" {
		t.Errorf("stop signal %q, want SIGTERM", stop.str("signal"))
	}
	if el := elapsedOf(t, stop); el < drain || el > drain+dumpSlack {
		t.Errorf("stop signal sent %s after the trigger, want the drain delay %s (+%s)", el, drain, dumpSlack)
	}
	forwardedFirst(t, d, "SIGQUIT")
	if st, _ := only(t, d, "drainit exiting").int("status"); st != 0 {
		t.Errorf("drainit logged exit status %d, want 0", st)
	}
}

// TestGoDumpOnQuit: a Go app (testapp) under drainit as PID 1.
func TestGoDumpOnQuit(t *testing.T) {
	requireRoot(t)
	// Go's own default, pinned: GOTRACEBACK=crash in the caller's environment would make the
	// runtime abort (status 134) instead of exiting 2.
	env := []string{"GOTRACEBACK=single"}

	// Without --stop-signal, SIGQUIT goes to the app at once: the Go runtime prints every
	// goroutine's stack and exits 2, and drainit exits 2 without a drain, with nothing of the stop
	// sequence logged.
	t.Run("no stop signal: goroutine dump", func(t *testing.T) {
		t.Parallel()
		const drain = 3 * time.Second
		// wait-signal USR1 says ready once the Go runtime, and so its SIGQUIT handler, is set up;
		// it leaves SIGQUIT to the runtime.
		d := start(t, spec{mode: pid1, env: env,
			args: []string{"--drain-delay", "3s", "--log-level", "debug"},
			app:  app("wait-signal", "USR1", "60s")})
		d.stdout.AwaitPID(t, waitTimeout, "ready app")

		sent := time.Now()
		d.signal(syscall.SIGQUIT)
		got := d.wait(waitTimeout)
		took := time.Since(sent)
		if got != (exitStatus{code: 2}) {
			t.Fatalf("drainit: %v, want exit 2 (the Go runtime's status after a SIGQUIT dump)\n%s", got, d.dump())
		}
		if took >= drain {
			t.Errorf("drainit exited %s after SIGQUIT, not before the drain delay %s: it drained first", took, drain)
		}
		stderr := d.stderr.Texts()
		if !slices.Contains(stderr, "SIGQUIT: quit") {
			t.Errorf("no \"SIGQUIT: quit\" from the Go runtime on stderr\n%s", d.dump())
		}
		goroutines := 0
		for _, l := range stderr {
			if strings.HasPrefix(l, "goroutine ") {
				goroutines++
			}
		}
		if goroutines == 0 {
			t.Errorf("no goroutine in the dump\n%s", d.dump())
		}
		for _, m := range []string{"stop sequence started", "draining: the app keeps serving", "stop signal sent"} {
			if len(events(d, m)) > 0 {
				t.Errorf("drainit logged %q: SIGQUIT started a stop sequence without --stop-signal\n%s", m, d.dump())
			}
		}
		forwardedFirst(t, d, "SIGQUIT")
		if st, _ := only(t, d, "app exited").int("status"); st != 2 {
			t.Errorf("drainit logged the app's status %d, want 2", st)
		}
		if st, _ := only(t, d, "drainit exiting").int("status"); st != 2 {
			t.Errorf("drainit logged exit status %d, want 2", st)
		}
	})

	// With --stop-signal QUIT (the nginx setting), SIGQUIT is a trigger: the drain runs first and
	// the app gets SIGQUIT after it, from drainit, as its stop signal. An app that handles
	// SIGQUIT (as nginx does: graceful stop) exits 0, and so does drainit; no runtime dump.
	t.Run("stop signal QUIT: drain first", func(t *testing.T) {
		t.Parallel()
		const drain = time.Second
		d := start(t, spec{mode: pid1, env: env,
			args: []string{"--stop-signal", "QUIT", "--drain-delay", "1s", "--grace-period", "10s"},
			app:  app("wait-signal", "QUIT", "60s")})
		d.stdout.AwaitPID(t, waitTimeout, "ready app")

		sent := time.Now()
		d.signal(syscall.SIGQUIT)
		d.stdout.AwaitExact(t, waitTimeout, "got app SIGQUIT")
		if got := time.Since(sent); got < drain {
			t.Errorf("the app got SIGQUIT %s after it was sent to drainit, before the drain delay %s", got, drain)
		} else if got > drain+dumpSlack {
			t.Errorf("the app got SIGQUIT %s after it was sent to drainit, want the drain delay %s (+%s)", got, drain, dumpSlack)
		}
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0 (the app's status)\n%s", got, d.dump())
		}
		if trigger := only(t, d, "stop sequence started"); trigger.str("signal") != "SIGQUIT" {
			t.Errorf("the stop sequence was started by %q, want SIGQUIT", trigger.str("signal"))
		}
		only(t, d, "draining: the app keeps serving")
		stop := only(t, d, "stop signal sent")
		if stop.str("signal") != "SIGQUIT" {
			t.Errorf("stop signal %q, want SIGQUIT", stop.str("signal"))
		}
		if el := elapsedOf(t, stop); el < drain || el > drain+dumpSlack {
			t.Errorf("stop signal sent %s after the trigger, want the drain delay %s (+%s)", el, drain, dumpSlack)
		}
		if slices.Contains(d.stderr.Texts(), "SIGQUIT: quit") {
			t.Errorf("the Go runtime dumped goroutines: the app's SIGQUIT handler was not in place\n%s", d.dump())
		}
	})
}
