package podman

import (
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// slack is the tolerance of timing assertions on top of the configured durations: podman, conmon
// and a loaded two-core machine each add some latency.
const slack = time.Second

// `podman stop` sends SIGTERM to drainit (PID 1); the app keeps running through the drain
// delay, then gets SIGTERM, shuts down and exits 0, and the container's exit code is the app's.
// podman never has to SIGKILL, and the summary is in /dev/termination-log.
func TestStopDrainsThenStopsTheApp(t *testing.T) {
	h := need(t)
	t.Parallel()
	const drain, stopTimeout = 2 * time.Second, 10
	// The kubelet bind-mounts an empty file at /dev/termination-log; drainit leaves its summary
	// there.
	termLog := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(termLog, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	id := h.start(t, []string{"--volume=" + termLog + ":/dev/termination-log",
		"--env=DRAINIT_DRAIN_DELAY=2s", "--env=DRAINIT_GRACE_PERIOD=10s", "--env=DRAINIT_KILL_MARGIN=1s"},
		"--", "/testapp", "slow-stop", "500ms")
	// The app handles SIGTERM from the moment it says ready; before that a SIGTERM would kill it.
	h.waitLog(t, id, "ready app", 10*time.Second)

	beforeStop := time.Now()
	took, stderr := h.stop(t, id, stopTimeout)
	t.Logf("podman stop --time %d took %s", stopTimeout, took)
	code, _ := h.exited(t, id)
	o := h.logs(t, id)

	// What podman saw first: these hold whatever drainit logged.
	if strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman had to SIGKILL the container: %s", stderr)
	}
	if took >= stopTimeout*time.Second {
		t.Errorf("podman stop took %s, not less than its timeout %ds", took, stopTimeout)
	}
	if code != 0 {
		t.Errorf("container exit code %d, want 0, the app's status", code)
	}

	trigger := o.event(t, "stop sequence started")
	if trigger.Signal != "SIGTERM" {
		t.Errorf("stop sequence started on %q, want SIGTERM (podman stop's signal)", trigger.Signal)
	}
	sent := o.event(t, "stop signal sent")
	if sent.Signal != "SIGTERM" {
		t.Errorf("stop signal %q, want SIGTERM (the trigger, forwarded)", sent.Signal)
	}
	if el := sent.elapsed(t); el < drain {
		t.Errorf("drainit sent the stop signal %s after the trigger, before the drain delay %s", el, drain)
	}
	// Measured by conmon's timestamps on the host's clock, independently of drainit's own: podman
	// stop was called before the trigger, so the app's SIGTERM can be no earlier than the drain
	// delay after that call; and it comes promptly once the drain is over.
	got := o.appLine(t, "got app SIGTERM")
	if d := got.At.Sub(beforeStop); d < drain {
		t.Errorf("the app got SIGTERM %s after podman stop was called, before the drain delay %s", d, drain)
	}
	if d := got.At.Sub(trigger.at); d > drain+slack {
		t.Errorf("the app got SIGTERM %s after the trigger, want the drain delay %s (+%s)", d, drain, slack)
	}
	o.appLine(t, "stopped app") // the app finished its own shutdown: nobody killed it

	exited := o.event(t, "app exited")
	done := o.event(t, "drainit exiting")
	if exited.Status == nil || *exited.Status != 0 {
		t.Errorf("app exited with %v, want 0 (slow-stop exits 0 on SIGTERM)", exited.Status)
	}
	if done.Status == nil || *done.Status != code {
		t.Errorf("drainit logged exit status %v, the container's is %d", done.Status, code)
	}
	if b, err := os.ReadFile(termLog); err != nil || string(b) != done.Summary || done.Summary == "" {
		t.Errorf("termination log %q (%v), want drainit's summary %q", b, err, done.Summary)
	}
}

// An app that ignores SIGTERM is SIGKILLed by drainit at the grace period minus the kill margin,
// before podman's own SIGKILL at its stop timeout: drainit itself lives on to log its summary and
// exit 137 (the app's status: killed), and `podman stop` returns without its SIGKILL.
func TestAppIgnoringTermIsKilledByDrainitBeforePodman(t *testing.T) {
	h := need(t)
	// Not parallel: the stop must take less than podman's 5 s timeout, of which drainit uses 4 s.
	const grace, drain, margin, stopTimeout = 5 * time.Second, time.Second, time.Second, 5
	id := h.start(t, []string{"--env=DRAINIT_GRACE_PERIOD=5s", "--env=DRAINIT_DRAIN_DELAY=1s", "--env=DRAINIT_KILL_MARGIN=1s"},
		"--", "/testapp", "ignore-term")
	h.waitLog(t, id, "ready app", 10*time.Second)

	took, stderr := h.stop(t, id, stopTimeout)
	t.Logf("podman stop --time %d took %s", stopTimeout, took)
	code, exitAt := h.exited(t, id)
	o := h.logs(t, id)

	// What podman saw first: these hold whatever drainit logged. podman's SIGKILL would also
	// give 137; drainit's summary line shows that drainit itself lived to exit. How long the
	// podman command took is only logged: its own start-up and clean-up count in it (2 s on a
	// busy machine), not in its timeout, whose expiry its warning says.
	if strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman had to SIGKILL the container: %s", stderr)
	}
	if code != 137 {
		t.Errorf("container exit code %d, want 137", code)
	}
	if !o.has("drainit exiting") {
		t.Fatal("drainit logged no summary: it did not live to exit")
	}

	// The container's end, on the host's clock, against the trigger as conmon timestamped it:
	// what podman's timeout measures, without the podman command's own start-up.
	if d := exitAt.Sub(o.event(t, "stop sequence started").at); d >= grace {
		t.Errorf("the container exited %s after the trigger, not before the grace period %s", d, grace)
	}
	if el := o.event(t, "stop signal sent").elapsed(t); el < drain {
		t.Errorf("stop signal %s after the trigger, before the drain delay %s", el, drain)
	}
	kill := o.event(t, "app still running: SIGKILL to everything")
	if el := kill.elapsed(t); el < grace-margin || el >= grace {
		t.Errorf("drainit sent SIGKILL %s after the trigger, want from grace - kill margin = %s up to the grace %s",
			el, grace-margin, grace)
	}
	exited := o.event(t, "app exited")
	if exited.Signal != "SIGKILL" || exited.Status == nil || *exited.Status != 137 {
		t.Errorf("app exited with status %v signal %q, want 137 by SIGKILL", exited.Status, exited.Signal)
	}
	done := o.event(t, "drainit exiting")
	if done.Status == nil || *done.Status != 137 {
		t.Errorf("drainit exited with %v, want 137", done.Status)
	}
	if !strings.Contains(done.Summary, "drainit had to SIGKILL") {
		t.Errorf("summary %q does not say drainit had to SIGKILL", done.Summary)
	}
}

// The counterpart of the test above, and the proof that its evidence tells the two apart: when
// podman's stop timeout is shorter than drainit's grace period, podman SIGKILLs drainit in the
// middle of the drain. Nothing of the stop sequence after that point happens and drainit writes
// no summary: the misconfiguration users must avoid (grace period > `podman stop -t`).
func TestStopTimeoutShorterThanGraceKillsDrainit(t *testing.T) {
	h := need(t)
	t.Parallel()
	id := h.start(t, []string{"--env=DRAINIT_GRACE_PERIOD=30s", "--env=DRAINIT_DRAIN_DELAY=20s"},
		"--", "/testapp", "sleep", "1m")
	h.waitLog(t, id, "app started", 10*time.Second)

	_, stderr := h.stop(t, id, 1)
	code, _ := h.exited(t, id)
	o := h.logs(t, id)

	o.event(t, "stop sequence started")
	if !strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman stop did not warn that it SIGKILLed the container; stderr: %q", stderr)
	}
	for _, m := range []string{"stop signal sent", "app exited", "drainit exiting"} {
		if o.has(m) {
			t.Errorf("drainit logged %q although podman killed it during the drain", m)
		}
	}
	if code != 137 {
		t.Errorf("container exit code %d, want 137 (podman's SIGKILL)", code)
	}
}

// The container's exit code is the app's, through drainit's --exit-map when one is given.
func TestExitStatusPassesThrough(t *testing.T) {
	h := need(t)
	t.Parallel()
	cases := []struct {
		name string
		args []string
		stop bool // podman stop the container instead of waiting for the app to exit
		want int
	}{
		{"exit code", []string{"--", "/testapp", "exit", "3"}, false, 3},
		{"killed by a signal is 128+N", []string{"--", "/testapp", "die", "HUP"}, false, 129},
		{"exit map", []string{"--exit-map", "3:0", "--", "/testapp", "exit", "3"}, false, 0},
		// An app that lets SIGTERM kill it (Go's, the JVM's default) reports 143 on every
		// rollout; --exit-map 143:0 makes a clean stop a clean exit.
		{"stopped app without exit map", []string{"--drain-delay", "0", "--", "/testapp", "sleep", "1m"}, true, 143},
		{"stopped app with exit map", []string{"--exit-map", "143:0", "--drain-delay", "0", "--", "/testapp", "sleep", "1m"}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := h.start(t, nil, c.args...)
			if c.stop {
				h.waitLog(t, id, "app started", 10*time.Second)
				h.stop(t, id, 10)
			}
			code, _ := h.exited(t, id)
			if code != c.want {
				t.Errorf("container exit code %d, want %d", code, c.want)
			}
			if done := h.logs(t, id).event(t, "drainit exiting"); done.Status == nil || *done.Status != code {
				t.Errorf("drainit logged exit status %v, the container's is %d", done.Status, code)
			}
		})
	}
}

// TestCannotStartInScratchImage: the two mistakes of an image FROM scratch, a dynamically linked
// app (its loader is not in the image) and a script (no shell), are each said for what they are:
// the file that is missing is named, not the app that is there. Exit 127, as a shell's.
func TestCannotStartInScratchImage(t *testing.T) {
	h := need(t)
	t.Parallel()
	dynamic, loader := "", ""
	for _, name := range []string{"true", "ls"} {
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		if f, err := elf.Open(p); err == nil {
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					b, _ := io.ReadAll(prog.Open())
					dynamic, loader = p, strings.TrimRight(string(b), "\x00")
				}
			}
			f.Close()
		}
		if loader != "" {
			break
		}
	}
	if loader == "" {
		t.Fatal("no dynamically linked program on the host to run in the image")
	}
	script := filepath.Join(t.TempDir(), "run.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec /testapp sleep 1m\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, host, says string }{
		{"dynamic app", dynamic, "the dynamic loader it names, " + loader + ", does not exist"},
		{"script", script, "the interpreter its #! line names, /bin/sh, does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			id := h.start(t, []string{"-v", c.host + ":/app:ro"}, "--", "/app")
			code, _ := h.exited(t, id)
			if code != 127 {
				t.Errorf("container exit code %d, want 127", code)
			}
			e := h.logs(t, id).event(t, "app not started")
			if !strings.Contains(e.Error, "/app: no such file or directory: "+c.says) {
				t.Errorf("drainit logged %q; want it to say %q", e.Error, c.says)
			}
		})
	}
}

// TestCrashRunsOfflineHooks: the app exits on its own in a container (a crash: nobody asked it
// to stop), after it was in service (no ready probe: from its start). drainit runs the offline
// hooks (the deregistration) before the post-stop hooks, and the container's exit code is the
// app's. Before, a crash ran only the post-stop hooks.
func TestCrashRunsOfflineHooks(t *testing.T) {
	h := need(t)
	t.Parallel()
	id := h.start(t, nil, "--offline-exec", "/testapp sleep 300ms", "--post-stop-exec", "/testapp exit 0",
		"--", "/testapp", "exit", "3")
	if code, _ := h.exited(t, id); code != 3 {
		t.Fatalf("container exit code %d, want the app's 3", code)
	}
	o := h.logs(t, id)
	var order []string
	for _, e := range o.drainit {
		if e.Message == "hook done" || e.Message == "hook failed; going on" {
			order = append(order, e.Phase+": "+e.Message)
		}
	}
	if want := []string{"offline: hook done", "post-stop: hook done"}; !slices.Equal(order, want) {
		t.Fatalf("hooks ran as %q, want %q", order, want)
	}
	if s := o.event(t, "drainit exiting").Summary; !strings.Contains(s, "offline hooks (app exited)") {
		t.Errorf("summary %q does not say the offline hooks ran for the app's exit", s)
	}
}
