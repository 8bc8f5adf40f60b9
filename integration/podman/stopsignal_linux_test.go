package podman

import (
	"strings"
	"testing"
	"time"
)

// stopSignal is the signal `podman stop` sends the container, as podman recorded it from the
// image's STOPSIGNAL (a number: 3 is SIGQUIT, 15 SIGTERM).
func (h *harness) stopSignal(t *testing.T, id string) string {
	t.Helper()
	return h.must(t, "inspect", "--type", "container", "--format", "{{.Config.StopSignal}}", id)
}

// The README's nginx setting in an image FROM nginx: the image's STOPSIGNAL SIGQUIT is what
// `podman stop` sends, and with DRAINIT_STOP_SIGNAL=QUIT that SIGQUIT starts the stop sequence.
// The app keeps running through the drain and gets SIGQUIT only after it, shuts down and exits
// 0, which is the container's exit code; podman never has to SIGKILL. Before the stop signal
// was always a trigger, drainit passed the SIGQUIT on at once and nothing drained.
func TestImageStopSignalQuitDrainsFirst(t *testing.T) {
	h := need(t)
	t.Parallel()
	const drain, stopTimeout = 2 * time.Second, 15
	id := h.startImage(t, imageQuit, []string{"--env=DRAINIT_STOP_SIGNAL=QUIT",
		"--env=DRAINIT_DRAIN_DELAY=2s", "--env=DRAINIT_GRACE_PERIOD=15s"},
		"--", "/testapp", "wait-signal", "QUIT", "60s")
	if sig := h.stopSignal(t, id); sig != "3" {
		t.Fatalf("podman's stop signal for the container is %s, want 3 (SIGQUIT, the image's STOPSIGNAL)", sig)
	}
	// "ready" once the app's SIGQUIT handler is in place: before it, SIGQUIT would end the app
	// with a goroutine dump.
	h.waitLog(t, id, "ready app", 10*time.Second)

	beforeStop := time.Now()
	took, stderr := h.stop(t, id, stopTimeout)
	t.Logf("podman stop --time %d took %s", stopTimeout, took)
	code, _ := h.exited(t, id)
	o := h.logs(t, id)

	// What podman and the app saw first: these hold whatever drainit did or logged.
	if strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman had to SIGKILL the container: %s", stderr)
	}
	if took >= stopTimeout*time.Second {
		t.Errorf("podman stop took %s, not less than its timeout %ds", took, stopTimeout)
	}
	if code != 0 {
		t.Errorf("container exit code %d, want 0, the app's status (wait-signal exits 0 on SIGQUIT)", code)
	}
	// conmon's timestamps, on the host's clock: podman stop was called before the trigger, so the
	// app's SIGQUIT can be no earlier than the drain delay after that call.
	got := o.appLine(t, "got app SIGQUIT")
	if d := got.At.Sub(beforeStop); d < drain {
		t.Errorf("the app got SIGQUIT %s after podman stop was called, before the drain delay %s", d, drain)
	}

	trigger := o.event(t, "stop sequence started")
	if trigger.Signal != "SIGQUIT" {
		t.Errorf("stop sequence started on %q, want SIGQUIT (the image's STOPSIGNAL)", trigger.Signal)
	}
	draining := o.event(t, "draining: the app keeps serving")
	if draining.DrainDelay == nil || time.Duration(*draining.DrainDelay)*time.Millisecond != drain {
		t.Errorf("drainit drained for %v ms, want the configured %s", draining.DrainDelay, drain)
	}
	sent := o.event(t, "stop signal sent")
	if sent.Signal != "SIGQUIT" {
		t.Errorf("stop signal %q, want SIGQUIT (DRAINIT_STOP_SIGNAL)", sent.Signal)
	}
	if el := sent.elapsed(t); el < drain || el > drain+slack {
		t.Errorf("drainit sent the stop signal %s after the trigger, want the drain delay %s (+%s)", el, drain, slack)
	}
	if d := got.At.Sub(trigger.at); d > drain+slack {
		t.Errorf("the app got SIGQUIT %s after the trigger, want the drain delay %s (+%s)", d, drain, slack)
	}
	if exited := o.event(t, "app exited"); exited.Status == nil || *exited.Status != 0 {
		t.Errorf("app exited with %v, want 0", exited.Status)
	}
	done := o.event(t, "drainit exiting")
	if done.Status == nil || *done.Status != code {
		t.Errorf("drainit logged exit status %v, the container's is %d", done.Status, code)
	}
	if !strings.Contains(done.Summary, "stop SIGQUIT") {
		t.Errorf("summary %q does not show the app stopped with SIGQUIT", done.Summary)
	}
}

// The counterpart, the rule's other half: the same image without DRAINIT_STOP_SIGNAL. SIGQUIT
// is then not a trigger (a JVM's thread dump, a Go goroutine dump must still reach the app), so
// podman's SIGQUIT is forwarded at once: no stop sequence, no drain, and the app ends on it.
// What an image FROM nginx gets when --stop-signal QUIT is forgotten.
func TestImageStopSignalQuitWithoutStopSignalIsForwarded(t *testing.T) {
	h := need(t)
	t.Parallel()
	const drain, stopTimeout = 2 * time.Second, 15
	id := h.startImage(t, imageQuit, []string{"--env=DRAINIT_DRAIN_DELAY=2s",
		"--env=DRAINIT_GRACE_PERIOD=15s", "--env=DRAINIT_LOG_LEVEL=debug"},
		"--", "/testapp", "wait-signal", "QUIT", "60s")
	if sig := h.stopSignal(t, id); sig != "3" {
		t.Fatalf("podman's stop signal for the container is %s, want 3 (SIGQUIT, the image's STOPSIGNAL)", sig)
	}
	h.waitLog(t, id, "ready app", 10*time.Second)

	beforeStop := time.Now()
	took, stderr := h.stop(t, id, stopTimeout)
	t.Logf("podman stop --time %d took %s", stopTimeout, took)
	code, _ := h.exited(t, id)
	o := h.logs(t, id)

	if strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman had to SIGKILL the container: %s", stderr)
	}
	if code != 0 {
		t.Errorf("container exit code %d, want 0, the app's status (wait-signal exits 0 on SIGQUIT)", code)
	}
	// Host clock: the whole way from calling podman stop to the app's line is shorter than the
	// drain delay alone.
	if d := o.appLine(t, "got app SIGQUIT").At.Sub(beforeStop); d >= drain {
		t.Errorf("the app got SIGQUIT %s after podman stop was called, not before the drain delay %s: it was held back", d, drain)
	}
	for _, m := range []string{"stop sequence started", "draining: the app keeps serving", "stop signal sent"} {
		if o.has(m) {
			t.Errorf("drainit logged %q: SIGQUIT started a stop sequence without --stop-signal QUIT", m)
		}
	}
	fwd := o.event(t, "forwarding signal to the app's process group")
	if fwd.Signal != "SIGQUIT" {
		t.Errorf("drainit forwarded %q first, want SIGQUIT", fwd.Signal)
	}
	done := o.event(t, "drainit exiting")
	if done.Status == nil || *done.Status != code {
		t.Errorf("drainit logged exit status %v, the container's is %d", done.Status, code)
	}
}
