package node

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The timing every pod here uses: grace 10 s in the pod and in drainit, a fixed 2 s drain and
// drainit's default 2 s kill margin.
const (
	grace      = 10
	drainDelay = 2 * time.Second
	killMargin = 2 * time.Second
	// clockSlack covers drainit's log times being to the millisecond while the runtime's are to
	// the nanosecond: an event drainit logs at 12.0004 s shows as 12.000 s.
	clockSlack = 2 * time.Millisecond
)

// drainitEnv is drainit's configuration in every pod, as Dockerfile.example sets it.
func drainitEnv(extra ...string) map[string]string {
	env := map[string]string{
		"DRAINIT_GRACE_PERIOD": "10s",
		"DRAINIT_DRAIN_DELAY":  drainDelay.String(),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

// elapsed is an event's time since the trigger on drainit's own clock, -1 when it has none.
// Tests compare it rather than two events' log times, which are taken as each line is written.
func elapsed(e event) time.Duration {
	if e.Elapsed == nil {
		return -1
	}
	return time.Duration(*e.Elapsed * float64(time.Millisecond))
}

// drainedThenSignalled asserts the promise: the stop sequence started at t0 on the trigger,
// the app got sig no sooner than the drain delay, drain, after t0, drainit exited with the app's status
// and its summary, and the runtime never had to SIGKILL.
func drainedThenSignalled(t *testing.T, s stopped, sig string, t0 time.Time, drain time.Duration) {
	t.Helper()
	got := s.appLine(t, "got app ")
	if got.text != "got app "+sig {
		t.Errorf("the app's first signal is %q, want %s", strings.TrimPrefix(got.text, "got app "), sig)
	}
	if after := got.at.Sub(t0); after < drain-clockSlack {
		t.Errorf("the app got %s %s after the trigger, before the %s drain had passed", sig, after, drain)
	}
	// drainit's own elapsed (from its clock's t0 to the event), not the difference of two log
	// times: each is taken as the line is written, the trigger's a moment after t0 on a busy
	// machine (seen: 999 ms between the two lines for a 1 s drain under load).
	sent := s.find(t, "stop signal sent")
	if sent.Signal != sig || elapsed(sent) < drain {
		t.Errorf("drainit sent %s %s after the trigger (its elapsed), want %s no sooner than the %s drain", sent.Signal, elapsed(sent), sig, drain)
	}
	if got.at.Before(sent.Time.Add(-clockSlack)) {
		t.Errorf("the app got %s at %s, before drainit sent it (%s)", sig, got.at.Format(time.StampMicro), sent.Time.Format(time.StampMilli))
	}
	if s.exit.ExitStatus != 0 {
		t.Errorf("the container exited %d, want 0 (the app's status)", s.exit.ExitStatus)
	}
	if done := s.find(t, "drainit exiting"); done.Summary == "" {
		t.Error("drainit's last event has no summary")
	}
	if s.runtimeKill {
		t.Error("containerd had to SIGKILL the container")
	}
}

// TestHTTPGetPreStop: the kubelet's httpGet preStop calls /prestop, which returns once drainit
// has drained; the kubelet then sends SIGTERM, which drainit passes to the app at once.
func TestHTTPGetPreStop(t *testing.T) {
	n := need(t)
	t.Parallel()
	r := n.start(t, pod{name: "prestop-http", image: imageTerm, grace: grace, env: drainitEnv(),
		app: []string{"signals"}, preStop: "httpGet"})
	s := r.stop(t)

	if s.preStopAt.IsZero() {
		t.Fatal("the kubelet logged no \"Running preStop hook\"")
	}
	called := s.find(t, "/prestop called")
	if !strings.HasPrefix(called.UserAgent, "kube-lifecycle/") {
		t.Errorf("/prestop was called by %q, want the kubelet (kube-lifecycle/…)", called.UserAgent)
	}
	start := s.find(t, "stop sequence started by /prestop")
	t.Logf("the hook reached drainit %s after the kubelet's \"Running preStop hook\"", called.Time.Sub(s.preStopAt).Round(time.Millisecond))
	drainedThenSignalled(t, s, "SIGTERM", start.Time, drainDelay)
	if s.stopSignal != "terminated" {
		t.Errorf("containerd sent %q, want SIGTERM (\"terminated\")", s.stopSignal)
	}
	// The kubelet's arithmetic: it gives the runtime grace − floor(the hook's duration).
	hook := s.signalAt.Sub(s.preStopAt)
	if hook < drainDelay-clockSlack {
		t.Errorf("the preStop hook returned after %s, before drainit's %s drain", hook, drainDelay)
	}
	checkKubeletGrace(t, s, grace, hook, 0)
	// drainit's deadline (t0 + its grace) is never later than the runtime's SIGKILL.
	if drainitDeadline, runtimeKill := start.Time.Add(grace*time.Second), s.signalAt.Add(time.Duration(s.grace)*time.Second); drainitDeadline.After(runtimeKill.Add(clockSlack)) {
		t.Errorf("drainit's deadline %s is after the runtime's SIGKILL at %s", drainitDeadline.Format(time.StampMilli), runtimeKill.Format(time.StampMilli))
	}
}

// checkKubeletGrace asserts that the kubelet gave the runtime what killContainer computes after
// a preStop hook that took hook and, for a native sidecar, a wait of wait for the containers
// before it, and that containerd was given the same. The kubelet measures both itself; one that
// the logs put within a few milliseconds of a whole second may round either way.
func checkKubeletGrace(t *testing.T, s stopped, podGrace int, hook, wait time.Duration) {
	t.Helper()
	want := map[int]bool{}
	for _, h := range []time.Duration{hook - 5*time.Millisecond, hook, hook + 5*time.Millisecond} {
		for _, w := range []time.Duration{wait - 5*time.Millisecond, wait, wait + 5*time.Millisecond} {
			want[kubeletGrace(podGrace, max(h, 0), max(w, 0))] = true
		}
	}
	if !want[s.grace] {
		t.Errorf("the kubelet gave the runtime %d s after a %s preStop and a %s wait, want grace − floor(hook) − floor(wait) = %v", s.grace, hook, wait, want)
	}
	if s.stopAfter != s.grace {
		t.Errorf("containerd's StopContainer timeout is %d s, the kubelet's grace %d s", s.stopAfter, s.grace)
	}
}

// kubeletGrace is killContainer's arithmetic: the pod's grace period less the preStop hook's
// time and a sidecar's wait for its turn, each rounded down to whole seconds, and at least the
// kubelet's 2 s minimum.
func kubeletGrace(podGrace int, hook, wait time.Duration) int {
	return max(podGrace-int(hook/time.Second)-int(wait/time.Second), 2)
}

// TestExecPreStop: the exec form, `drainit prestop` run in the container by the kubelet (through
// the runtime's ExecSync), does what the httpGet form does.
func TestExecPreStop(t *testing.T) {
	n := need(t)
	t.Parallel()
	r := n.start(t, pod{name: "prestop-exec", image: imageTerm, grace: grace, env: drainitEnv(),
		app: []string{"signals"}, preStop: "exec"})
	s := r.stop(t)

	if s.preStopAt.IsZero() {
		t.Fatal("the kubelet logged no \"Running preStop hook\"")
	}
	start := s.find(t, "stop sequence started by /prestop")
	if start.Time.Before(s.preStopAt.Truncate(time.Millisecond)) {
		t.Errorf("drainit's stop sequence started at %s, before the kubelet ran the hook at %s", start.Time.Format(time.StampMilli), s.preStopAt.Format(time.StampMicro))
	}
	t.Logf("the hook reached drainit %s after the kubelet's \"Running preStop hook\"", start.Time.Sub(s.preStopAt).Round(time.Millisecond))
	drainedThenSignalled(t, s, "SIGTERM", start.Time, drainDelay)
	checkKubeletGrace(t, s, grace, s.signalAt.Sub(s.preStopAt), 0)
}

// TestNoPreStop: without a hook the kubelet's SIGTERM is the trigger; drainit drains first and
// then passes SIGTERM on.
func TestNoPreStop(t *testing.T) {
	n := need(t)
	t.Parallel()
	r := n.start(t, pod{name: "sigterm", image: imageTerm, grace: grace, env: drainitEnv(), app: []string{"signals"}})
	s := r.stop(t)

	if !s.preStopAt.IsZero() {
		t.Error("the kubelet ran a preStop hook the pod does not have")
	}
	if s.grace != grace || s.stopSignal != "terminated" {
		t.Errorf("the kubelet gave %d s and containerd sent %q, want %d s and SIGTERM", s.grace, s.stopSignal, grace)
	}
	start := s.find(t, "stop sequence started")
	if start.Signal != "SIGTERM" {
		t.Errorf("the stop sequence was started by %q, want SIGTERM", start.Signal)
	}
	drainedThenSignalled(t, s, "SIGTERM", start.Time, drainDelay)
}

// TestImageStopSignalQuit: an image with STOPSIGNAL SIGQUIT (every image FROM nginx) is stopped
// with SIGQUIT by containerd. With the README's nginx setting (DRAINIT_STOP_SIGNAL=QUIT) that
// SIGQUIT starts the drain, and the app gets SIGQUIT after it. Before the stop signal became a
// trigger, drainit passed SIGQUIT on at once and nothing drained.
func TestImageStopSignalQuit(t *testing.T) {
	n := need(t)
	t.Parallel()
	r := n.start(t, pod{name: "stopsignal-quit", image: imageQuit, grace: grace,
		env: drainitEnv("DRAINIT_STOP_SIGNAL", "QUIT"), app: []string{"wait-signal", "QUIT", "60s"}})
	s := r.stop(t)

	if s.stopSignal != "quit" {
		t.Fatalf("containerd sent %q, want the image's STOPSIGNAL, SIGQUIT (\"quit\")", s.stopSignal)
	}
	start := s.find(t, "stop sequence started")
	if start.Signal != "SIGQUIT" {
		t.Errorf("the stop sequence was started by %q, want SIGQUIT", start.Signal)
	}
	drainedThenSignalled(t, s, "SIGQUIT", start.Time, drainDelay)
}

// TestAppIgnoresStopSignal: an app that ignores SIGTERM is SIGKILLed by drainit at t0 + grace −
// kill margin, before the runtime would; drainit still exits with its summary (status 137).
func TestAppIgnoresStopSignal(t *testing.T) {
	n := need(t)
	t.Parallel()
	r := n.start(t, pod{name: "ignore-term", image: imageTerm, grace: grace, env: drainitEnv(), app: []string{"ignore-term"}})
	s := r.stop(t)

	s.find(t, "stop sequence started")
	kill := s.find(t, "app still running: SIGKILL to everything")
	killAt := grace*time.Second - killMargin
	// drainit's elapsed from t0, as in drainedThenSignalled.
	if at := elapsed(kill); at < killAt || at > killAt+time.Second {
		t.Errorf("drainit SIGKILLed the app %s after the trigger, want %s (grace − kill margin)", at, killAt)
	}
	if s.exit.ExitStatus != 128+9 {
		t.Errorf("the container exited %d, want 137 (the app's death by SIGKILL)", s.exit.ExitStatus)
	}
	if done := s.find(t, "drainit exiting"); !strings.Contains(done.Summary, "SIGKILL") {
		t.Errorf("drainit's summary %q does not say it had to SIGKILL", done.Summary)
	}
	if s.runtimeKill {
		t.Error("containerd had to SIGKILL the container: drainit should have ended it first")
	}
}

// TestDrainitGraceLongerThanPod: drainit told 30 s in a 10 s pod believes it has time it does
// not: the runtime SIGKILLs drainit itself at the pod's deadline, the app dies with it, and
// drainit's summary is lost. `drainit check` on that manifest reports the mismatch.
func TestDrainitGraceLongerThanPod(t *testing.T) {
	n := need(t)
	t.Parallel()
	r := n.start(t, pod{name: "grace-mismatch", image: imageTerm, grace: grace,
		env: drainitEnv("DRAINIT_GRACE_PERIOD", "30s"), app: []string{"ignore-term"}})
	s := r.stop(t)

	if !s.runtimeKill {
		t.Error("containerd did not SIGKILL the container")
	}
	if s.exit.ExitStatus != 128+9 {
		t.Errorf("the container exited %d, want 137 (SIGKILL)", s.exit.ExitStatus)
	}
	if s.has("drainit exiting") {
		t.Error("drainit logged its exit, but the runtime should have killed it first")
	}
	if d := s.exit.ExitedAt.Sub(s.signalAt); d < time.Duration(s.grace)*time.Second {
		t.Errorf("the container died %s after the stop signal, before the kubelet's %d s", d, s.grace)
	}

	if out, err := r.check(t); err == nil || !strings.Contains(out, "drainit-grace-mismatch") {
		t.Errorf("drainit check on the manifest: %v, want a drainit-grace-mismatch finding:\n%s", err, out)
	}
}

// check runs `drainit check` on the pod's manifest, as its author would before applying it, and
// returns its output; the error is its exit status when it reported a finding.
func (r *running) check(t *testing.T) (string, error) {
	t.Helper()
	manifest := filepath.Join(t.TempDir(), r.pod.name+".json")
	if err := os.WriteFile(manifest, r.spec, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(r.n.drainit, "check", manifest)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestPodGraceShorterThanDrain: the pod's grace period runs out while drainit still drains (a
// `kubectl delete --grace-period`, an eviction or a node's shutdown gives a pod less than its
// terminationGracePeriodSeconds, which drainit's --grace-period was set from; here the pod has 4 s
// and drainit is told 30 s, with a 20 s drain). The kubelet waits for the preStop hook for the
// grace period, then sends the stop signal with its 2 s minimum before SIGKILL. drainit, its
// /prestop still waiting, takes that signal for the end of the grace period: the app gets its
// stop signal at once, the post-stop hook runs, and drainit exits with the app's status before the
// runtime's SIGKILL. Before, the drain went on, the runtime SIGKILLed the container at 6 s, and the
// app never had its stop signal. For both preStop forms: httpGet and `drainit prestop`.
func TestPodGraceShorterThanDrain(t *testing.T) {
	n := need(t)
	t.Parallel()
	const podGrace = 4
	for _, form := range []string{"httpGet", "exec"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			r := n.start(t, pod{name: "short-grace-" + strings.ToLower(form), image: imageTerm, grace: podGrace,
				env: drainitEnv("DRAINIT_GRACE_PERIOD", "30s", "DRAINIT_DRAIN_DELAY", "20s",
					"DRAINIT_POST_STOP_EXEC", "/testapp exit 0"),
				app: []string{"signals"}, preStop: form})
			s := r.stop(t)

			if s.preStopAt.IsZero() {
				t.Fatal("the kubelet logged no \"Running preStop hook\"")
			}
			// The kubelet gave up on the hook after the grace period, and gave the runtime 2 s.
			if wait := s.signalAt.Sub(s.preStopAt); wait < podGrace*time.Second-clockSlack || s.grace != 2 {
				t.Fatalf("the kubelet signalled %s after the preStop with a grace of %d s; want %d s and 2 s", wait, s.grace, podGrace)
			}
			over := s.find(t, "the kubelet's stop signal came while its preStop call still waited for the drain: the pod's grace period is over, shorter than drainit's --grace-period (kubectl delete --grace-period, an eviction, a node's shutdown?), and the runtime's SIGKILL follows in 2 s; stopping the app now")
			sent := s.find(t, "stop signal sent")
			if sent.Signal != "SIGTERM" || elapsed(sent) < elapsed(over) || elapsed(sent) > elapsed(over)+100*time.Millisecond {
				t.Errorf("drainit sent %s %s after the trigger, the kubelet's signal came at %s; want SIGTERM at once", sent.Signal, elapsed(sent), elapsed(over))
			}
			if got := s.appLine(t, "got app "); got.text != "got app SIGTERM" {
				t.Errorf("the app's first signal is %q, want SIGTERM", got.text)
			}
			if s.runtimeKill {
				t.Error("containerd had to SIGKILL the container")
			}
			if s.exit.ExitStatus != 0 {
				t.Errorf("the container exited %d, want 0 (the app's status)", s.exit.ExitStatus)
			}
			done := s.find(t, "drainit exiting")
			if !strings.Contains(done.Summary, "post-stop hooks: 1 ok") {
				t.Errorf("drainit's summary %q: the post-stop hook did not run", done.Summary)
			}
			if by := s.signalAt.Add(2 * time.Second); s.exit.ExitedAt.After(by) {
				t.Errorf("the container exited at %s, after the runtime's SIGKILL was due (%s)", s.exit.ExitedAt.Format(time.StampMilli), by.Format(time.StampMilli))
			}
		})
	}
}
