package node

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// hooksTogether bounds how far apart the kubelet starts the preStop hooks of one pod's
// containers: it starts them in goroutines of its own at once. A model where a sidecar's hook
// waits for the main containers would put it seconds later (their whole stop).
const hooksTogether = 250 * time.Millisecond

// TestSidecarWaitsForApp: a native sidecar's preStop runs at the deletion beside the app
// container's; its stop signal comes once the app container has exited; and the kubelet takes
// the hook and the wait off the sidecar's grace period, each rounded down to whole seconds
// (killContainer, kuberuntime_termination_order.go). Here the app container's drain is long and
// what is left is shorter than the sidecar's drain: the runtime SIGKILLs the sidecar mid-drain,
// and `drainit check` on the manifest reports exactly that (sidecar-exceeds-grace).
func TestSidecarWaitsForApp(t *testing.T) {
	n := need(t)
	t.Parallel()
	const (
		podGrace = 8
		// Fractions chosen so that the two roundings lose more than a second together: the
		// sidecar's hook 1.5 s (1), its wait 5.05 − 1.5 = 3.55 s (3), where one rounding of
		// the two would give floor(5.05) = 5. The hook's exec adds 30–100 ms, 350 ms seen under
		// load (0.5 s of room); the wait is the app's exit, a few tens of milliseconds after its
		// drain, and the kubelet's noticing it (up to half a second under load), less the hook's
		// time: it stays within [3, 4) s while that delay is under the hook's time less 1.05 s.
		// A run slower still is judged by the measured arithmetic alone (below).
		appDrain   = 5050 * time.Millisecond
		proxyHook  = 1500 * time.Millisecond
		proxyDrain = 4800 * time.Millisecond
	)
	r := n.start(t, withProxy("sidecar-wait", podGrace,
		drainitEnv("DRAINIT_GRACE_PERIOD", "8s", "DRAINIT_DRAIN_DELAY", appDrain.String()),
		// drainit's grace period is what the kubelet can leave the sidecar at most, 8 − 1.5 s
		// less a little, and holds its 4.8 s drain and 1 s kill margin.
		"sleep "+proxyHook.String(), drainitEnv("DRAINIT_GRACE_PERIOD", "6s", "DRAINIT_DRAIN_DELAY", proxyDrain.String(), "DRAINIT_KILL_MARGIN", "1s")))
	all := r.stopAll(t)
	app, proxy := all["app"], all["proxy"]

	// The app container stops as without a sidecar: its hook is the drain, then SIGTERM.
	appStart := app.find(t, "stop sequence started by /prestop")
	drainedThenSignalled(t, app, "SIGTERM", appStart.Time, appDrain)
	checkKubeletGrace(t, app, podGrace, app.signalAt.Sub(app.preStopAt), 0)

	// (a) The sidecar's hook starts with the app's and ends long before the app's stop does.
	if proxy.preStopAt.IsZero() || proxy.preStopDone.IsZero() || app.preStopAt.IsZero() {
		t.Fatalf("the kubelet logged no preStop hook for the app (%v) or the sidecar (%v, completed %v)", app.preStopAt, proxy.preStopAt, proxy.preStopDone)
	}
	if d := proxy.preStopAt.Sub(app.preStopAt).Abs(); d > hooksTogether {
		t.Errorf("the kubelet ran the sidecar's preStop %s apart from the app's, want at the same time (within %s)", d, hooksTogether)
	}
	hook := proxy.preStopDone.Sub(proxy.preStopAt)
	if hook < proxyHook || !proxy.preStopDone.Before(app.exit.ExitedAt) {
		t.Errorf("the sidecar's %s hook took %s and ended at %s, want it to run beside the app's stop (exit at %s)",
			proxyHook, hook, proxy.preStopDone.Format(time.StampMicro), app.exit.ExitedAt.Format(time.StampMicro))
	}

	// (b) Its stop signal comes only once the app container has exited.
	start := proxy.find(t, "stop sequence started")
	if start.Signal != "SIGTERM" {
		t.Errorf("the sidecar's stop sequence was started by %q, want SIGTERM", start.Signal)
	}
	if proxy.signalAt.Before(app.exit.ExitedAt) || start.Time.Before(app.exit.ExitedAt.Add(-clockSlack)) {
		t.Errorf("the sidecar was stopped (kubelet %s, drainit's SIGTERM %s) before the app container exited (%s)",
			proxy.signalAt.Format(time.StampMicro), start.Time.Format(time.StampMilli), app.exit.ExitedAt.Format(time.StampMicro))
	}
	t.Logf("the sidecar's hook took %s; the app container exited %s after it; the kubelet stopped the sidecar %s after that, drainit had SIGTERM %s after it",
		hook.Round(time.Millisecond), app.exit.ExitedAt.Sub(proxy.preStopDone).Round(time.Millisecond),
		proxy.signalAt.Sub(app.exit.ExitedAt).Round(time.Millisecond), start.Time.Sub(app.exit.ExitedAt).Round(time.Millisecond))

	// (c) What is left of the grace period: measured, then as the configured times give it.
	wait := proxy.signalAt.Sub(proxy.preStopDone)
	checkKubeletGrace(t, proxy, podGrace, hook, wait)
	want := kubeletGrace(podGrace, proxyHook, appDrain-proxyHook) // 8 − 1 − 3 = 4
	// The configured times tell the models apart only while the measured ones round as they
	// do; a machine slow enough to push them past a whole second leaves only the measured
	// check above (which then cannot tell one rounding from two), and says so.
	asConfigured := hook.Truncate(time.Second) == proxyHook.Truncate(time.Second) &&
		wait.Truncate(time.Second) == (appDrain-proxyHook).Truncate(time.Second)
	if !asConfigured {
		t.Logf("too slow to judge the configured arithmetic: hook %s, wait %s (configured %s, %s)", hook, wait, proxyHook, appDrain-proxyHook)
		want = proxy.grace
	}
	if proxy.grace != want {
		t.Errorf("the kubelet gave the sidecar %d s after its stop signal, want %d s (grace %d − floor(%s hook) − floor(%s wait))",
			proxy.grace, want, podGrace, proxyHook, appDrain-proxyHook)
	}
	if !proxy.runtimeKill {
		t.Fatalf("containerd did not SIGKILL the sidecar: its %s drain fit in the %d s it was given", proxyDrain, proxy.grace)
	}
	if d := proxy.killAt.Sub(proxy.signalAt); d < time.Duration(proxy.grace)*time.Second || d > time.Duration(proxy.grace)*time.Second+500*time.Millisecond {
		t.Errorf("containerd SIGKILLed the sidecar %s after the kubelet stopped it with %d s", d, proxy.grace)
	}
	// From the hooks' start: the app's drain, then the 4 s. The other models put it at 8 s (the
	// grace period from the deletion), 8.3 s (hook and wait rounded down together), 12.3 s (the
	// wait not taken off) or 13.3 s (a full grace period after the app container).
	killAt := appDrain + time.Duration(want)*time.Second
	if !asConfigured {
		killAt = proxy.signalAt.Sub(proxy.preStopAt) + time.Duration(want)*time.Second
	}
	t.Logf("the kubelet gave the sidecar %d s after a %s wait; containerd SIGKILLed it %s after its stop signal, %s after its preStop began (want %s)",
		proxy.grace, wait.Round(time.Millisecond), proxy.killAt.Sub(proxy.signalAt).Round(time.Millisecond),
		proxy.killAt.Sub(proxy.preStopAt).Round(time.Millisecond), killAt)
	if d := proxy.killAt.Sub(proxy.preStopAt); d < killAt-50*time.Millisecond || d > killAt+600*time.Millisecond {
		t.Errorf("containerd SIGKILLed the sidecar %s after its preStop began, want %s (app's drain %s + %d s)", d, killAt, appDrain, want)
	}
	if proxy.exit.ExitStatus != 128+9 {
		t.Errorf("the sidecar exited %d, want 137 (SIGKILL)", proxy.exit.ExitStatus)
	}
	if proxy.has("stop signal sent") {
		t.Error("the sidecar's drainit finished its drain, but the kubelet's SIGKILL should have come first")
	}

	out, err := r.check(t)
	if fs := findings(out); err == nil || len(fs) != 1 || !strings.Contains(fs[0], `container "proxy"`) || !strings.Contains(fs[0], "(sidecar-exceeds-grace)") {
		t.Errorf("drainit check on the manifest: %v, want one finding, the sidecar's sidecar-exceeds-grace:\n%s", err, out)
	}
}

// TestSidecarMinimumGrace: a sidecar whose turn comes when less than 2 s of the grace period are
// left still gets the kubelet's 2 s minimum after its stop signal (killContainer), so a short
// stop fits even past the grace period. `drainit check` on the manifest reports nothing.
func TestSidecarMinimumGrace(t *testing.T) {
	n := need(t)
	t.Parallel()
	// The app container's stop takes all but a fraction of a second of the grace period.
	const podGrace, appDrain, proxyDrain = 4, 3200 * time.Millisecond, time.Second
	r := n.start(t, withProxy("sidecar-minimum", podGrace,
		drainitEnv("DRAINIT_GRACE_PERIOD", "4s", "DRAINIT_DRAIN_DELAY", appDrain.String(), "DRAINIT_KILL_MARGIN", "500ms"),
		"", drainitEnv("DRAINIT_GRACE_PERIOD", "4s", "DRAINIT_DRAIN_DELAY", proxyDrain.String(), "DRAINIT_KILL_MARGIN", "500ms")))
	all := r.stopAll(t)
	app, proxy := all["app"], all["proxy"]

	drainedThenSignalled(t, app, "SIGTERM", app.find(t, "stop sequence started by /prestop").Time, appDrain)
	start := proxy.find(t, "stop sequence started")
	if start.Time.Before(app.exit.ExitedAt.Add(-clockSlack)) {
		t.Errorf("the sidecar got %s at %s, before the app container exited (%s)", start.Signal, start.Time.Format(time.StampMilli), app.exit.ExitedAt.Format(time.StampMicro))
	}
	// It has no hook: it waits from the deletion, when the app's hook starts.
	wait := proxy.signalAt.Sub(app.preStopAt)
	checkKubeletGrace(t, proxy, podGrace, 0, wait)
	if proxy.grace != 2 {
		t.Errorf("the kubelet gave the sidecar %d s after a %s wait, want its 2 s minimum (grace %d − floor(wait) = %d)",
			proxy.grace, wait, podGrace, podGrace-int(wait/time.Second))
	}
	drainedThenSignalled(t, proxy, "SIGTERM", start.Time, proxyDrain)
	if d := proxy.exit.ExitedAt.Sub(app.preStopAt); d <= podGrace*time.Second {
		t.Errorf("the sidecar exited %s after the deletion, want past the %d s grace period (the app's %s drain, then its own %s)", d, podGrace, appDrain, proxyDrain)
	}
	t.Logf("the kubelet gave the sidecar %d s after a %s wait; it exited %s after the deletion", proxy.grace,
		wait.Round(time.Millisecond), proxy.exit.ExitedAt.Sub(app.preStopAt).Round(time.Millisecond))

	if out, err := r.check(t); err != nil || len(findings(out)) != 0 {
		t.Errorf("drainit check on the manifest: %v, want no finding:\n%s", err, out)
	}
}

// TestSidecarsStopInReverse: two native sidecars stop in the reverse of their order in
// initContainers, the last declared first, each once the app container and the sidecars
// declared after it have exited. Their stops fit in the grace period: nothing is SIGKILLed, and
// `drainit check` on the manifest reports nothing.
func TestSidecarsStopInReverse(t *testing.T) {
	n := need(t)
	t.Parallel()
	// The sidecars' hooks end before the app's 2 s drain does, and each sidecar drains 1 s: a
	// sidecar stopped out of turn gets SIGTERM a second or more early. drainit check counts a
	// drainit container's stop as its drain and kill margin: 2 + 1, then 1 + 1 for each sidecar,
	// which fits in 10 s. The kubelet leaves a sidecar at most 10 − 1 s, its hook.
	const sidecarDrain = time.Second
	sidecarEnv := drainitEnv("DRAINIT_GRACE_PERIOD", "9s", "DRAINIT_DRAIN_DELAY", sidecarDrain.String(), "DRAINIT_KILL_MARGIN", "1s")
	r := n.start(t, pod{name: "sidecars-reverse", image: imageTerm, grace: grace,
		env: drainitEnv("DRAINIT_KILL_MARGIN", "1s"), app: []string{"signals"}, preStop: "httpGet",
		sidecars: []container{
			{name: "first", env: sidecarEnv, app: []string{"signals"}, preStop: "sleep 1s"},
			{name: "second", env: sidecarEnv, app: []string{"signals"}, preStop: "sleep 1s"},
		}})
	all := r.stopAll(t)
	app, first, second := all["app"], all["first"], all["second"]

	drainedThenSignalled(t, app, "SIGTERM", app.find(t, "stop sequence started by /prestop").Time, drainDelay)
	for _, c := range []struct {
		name  string
		s     stopped
		after string
		exit  time.Time
	}{{"second", second, "app", app.exit.ExitedAt}, {"first", first, "second", second.exit.ExitedAt}} {
		if d := c.s.preStopAt.Sub(app.preStopAt).Abs(); c.s.preStopAt.IsZero() || d > hooksTogether {
			t.Errorf("the kubelet ran sidecar %s's preStop %s apart from the app's (at %s), want at the same time (within %s)",
				c.name, d, c.s.preStopAt.Format(time.StampMicro), hooksTogether)
		}
		start := c.s.find(t, "stop sequence started")
		if start.Signal != "SIGTERM" || start.Time.Before(c.exit.Add(-clockSlack)) {
			t.Errorf("sidecar %s got %s at %s, before %s exited (%s)", c.name, start.Signal, start.Time.Format(time.StampMilli), c.after, c.exit.Format(time.StampMicro))
		}
		t.Logf("sidecar %s: SIGTERM %s after %s exited", c.name, start.Time.Sub(c.exit).Round(time.Millisecond), c.after)
		drainedThenSignalled(t, c.s, "SIGTERM", start.Time, sidecarDrain)
	}

	if out, err := r.check(t); err != nil || len(findings(out)) != 0 {
		t.Errorf("drainit check on the manifest: %v, want no finding:\n%s", err, out)
	}
}

// withProxy is a pod of two containers running testapp's signals mode under drainit: "app",
// whose preStop is /prestop, and a native sidecar, "proxy".
func withProxy(name string, grace int, appEnv map[string]string, proxyPreStop string, proxyEnv map[string]string) pod {
	return pod{name: name, image: imageTerm, grace: grace, env: appEnv, app: []string{"signals"}, preStop: "httpGet",
		sidecars: []container{{name: "proxy", env: proxyEnv, app: []string{"signals"}, preStop: proxyPreStop}}}
}

// findings are the finding lines of `drainit check`'s text output ("FILE:LINE: SEVERITY: …").
func findings(out string) []string {
	return regexp.MustCompile(`(?m)^\S+:\d+: (error|warning|info): .*$`).FindAllString(out, -1)
}
