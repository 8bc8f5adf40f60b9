package kubelet

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/pod"
	"github.com/drainit/drainit/integration/testbin"
	"github.com/drainit/drainit/integration/testenv"
)

// The scenarios run the real drainit as PID 1 of its own PID namespace and stop it with the
// simulator, as the kubelet would. Timing is asserted against the configured values with
// tolerances; nothing waits by sleeping.

// slack absorbs scheduling on a loaded 2-core machine; every bound below is configured ± slack.
const slack = 500 * time.Millisecond

// container is drainit running as PID 1 with its output.
type container struct {
	*pod.Pod
	out *lines.Log // drainit's log and the app's output, in one stream as a runtime shows them
}

// bins are built once by TestMain, before any test builds its command line.
var (
	bins    testbin.Paths
	binsErr error
)

func startDrainit(t *testing.T, env []string, args ...string) *container {
	t.Helper()
	if err := pod.Available(); err != nil {
		testenv.SkipUnlessCI(t, err.Error())
	}
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	out := lines.New("output")
	argv := append([]string{bins.Drainit, "--termination-log", ""}, args...)
	p, err := pod.Start(argv, pod.Options{Stdout: out, Stderr: out, Env: append(os.Environ(), env...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("output:\n%s", out)
		}
	})
	return &container{p, out}
}

func (c *container) kube() Container { return Container{PID: c.PID, Exited: c.Exited} }

// status is drainit's exit status once it has exited.
func (c *container) status(t *testing.T) int {
	t.Helper()
	s, ok := c.Wait(time.Minute)
	if !ok {
		t.Fatal("drainit still running")
	}
	return s
}

func TestAppExitsPromptlyOnTerm(t *testing.T) {
	c := startDrainit(t, nil, "--grace-period", "10s", "--drain-delay", "1s", "--", bins.TestApp, "slow-stop", "100ms")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	r := Pod{Grace: 10 * time.Second}.Stop(c.kube())
	got := c.out.AwaitContains(t, time.Second, "got app SIGTERM")
	if d := got.At.Sub(r.SignalAt); d < time.Second-slack/10 || d > time.Second+slack {
		t.Errorf("the app got SIGTERM %v after the kubelet's, want the 1s drain delay", d)
	}
	if r.Killed {
		t.Error("the kubelet had to SIGKILL")
	}
	if s := c.status(t); s != 0 {
		t.Errorf("exit status %d, want the app's 0", s)
	}
}

func TestAppIgnoresTermKilledBeforeKubelet(t *testing.T) {
	c := startDrainit(t, nil, "--grace-period", "4s", "--drain-delay", "500ms", "--kill-margin", "1s", "--", bins.TestApp, "ignore-term")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	r := Pod{Grace: 4 * time.Second}.Stop(c.kube())
	if r.Killed {
		t.Fatal("the kubelet had to SIGKILL: drainit did not kill the app before the deadline")
	}
	if d := r.ExitedAt.Sub(r.SignalAt); d < 3*time.Second-slack/10 || d > 4*time.Second {
		t.Errorf("drainit exited %v after SIGTERM, want about grace - kill margin = 3s, and before 4s", d)
	}
	if s := c.status(t); s != 137 {
		t.Errorf("exit status %d, want 137 (the app was SIGKILLed)", s)
	}
	c.out.AwaitContains(t, time.Second, "drainit had to SIGKILL")
}

func TestAppSlowerThanGrace(t *testing.T) {
	c := startDrainit(t, nil, "--grace-period", "3s", "--drain-delay", "500ms", "--kill-margin", "1s", "--", bins.TestApp, "slow-stop", "30s")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	stopInTime(t, c, 3*time.Second, 137)
}

// stopInTime deletes the pod and checks that drainit exited within the grace period, before the
// kubelet's SIGKILL, with status want.
func stopInTime(t *testing.T, c *container, grace time.Duration, want int) {
	t.Helper()
	r := Pod{Grace: grace}.Stop(c.kube())
	if r.Killed {
		t.Fatal("the kubelet had to SIGKILL")
	}
	if d := r.ExitedAt.Sub(r.SignalAt); d > grace {
		t.Errorf("drainit exited %v after the kubelet's SIGTERM, after the %v grace period", d, grace)
	}
	if s := c.status(t); s != want {
		t.Errorf("exit status %d, want %d", s, want)
	}
}

func TestOfflineHookHangsBounded(t *testing.T) {
	c := startDrainit(t, nil, "--grace-period", "10s", "--drain-delay", "1s", "--hook-timeout", "1s",
		"--offline-exec", `["/bin/sleep","60"]`, "--", bins.TestApp, "slow-stop", "0s")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	r := Pod{Grace: 10 * time.Second}.Stop(c.kube())
	got := c.out.AwaitContains(t, time.Second, "got app SIGTERM")
	// hook timeout 1s + drain 1s
	if d := got.At.Sub(r.SignalAt); d < 2*time.Second-slack/10 || d > 2*time.Second+slack {
		t.Errorf("stop signal %v after SIGTERM, want hook timeout + drain = 2s", d)
	}
	c.out.AwaitContains(t, time.Second, `"hook failed; going on"`)
	if r.Killed {
		t.Error("the kubelet had to SIGKILL")
	}
}

func TestFailingHooksDoNotStopTheSequence(t *testing.T) {
	down := testenv.FreeLoopbackAddr(t)
	c := startDrainit(t, nil, "--grace-period", "10s", "--drain-delay", "500ms",
		"--offline-exec", `["/bin/sh","-c","exit 3"]`, "--offline-http", "http://"+down+"/deregister",
		"--", bins.TestApp, "slow-stop", "0s")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	r := Pod{Grace: 10 * time.Second}.Stop(c.kube())
	if n := c.out.Count(lines.Containing(`"hook failed; going on"`)); n != 2 {
		t.Errorf("%d hook failures logged, want 2 (exit 3, server down)", n)
	}
	c.out.AwaitContains(t, time.Second, "got app SIGTERM")
	if r.Killed || c.status(t) != 0 {
		t.Error("the stop did not complete normally after failed hooks")
	}
}

func TestAppCrashesMidDrain(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "post-stop")
	c := startDrainit(t, nil, "--grace-period", "20s", "--drain-delay", "10s",
		"--post-stop-exec", fmt.Sprintf(`["/bin/sh","-c","echo done > %s"]`, marker),
		"--", "/bin/sh", "-c", "echo ready app; trap '' TERM; sleep 1; exit 3")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	r := Pod{Grace: 20 * time.Second}.Stop(c.kube())
	if d := r.ExitedAt.Sub(r.SignalAt); d > 2*time.Second {
		t.Errorf("drainit exited %v after SIGTERM: it waited out the drain for an app that was gone", d)
	}
	if s := c.status(t); s != 3 {
		t.Errorf("exit status %d, want the app's 3", s)
	}
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "done" {
		t.Errorf("post-stop hook did not run: %v", err)
	}
}

func TestDoubleSigtermJoins(t *testing.T) {
	count := filepath.Join(t.TempDir(), "runs")
	c := startDrainit(t, nil, "--grace-period", "10s", "--drain-delay", "1500ms",
		"--offline-exec", fmt.Sprintf(`["/bin/sh","-c","echo run >> %s"]`, count),
		"--", bins.TestApp, "slow-stop", "0s")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	done := make(chan Record)
	go func() { done <- Pod{Grace: 10 * time.Second}.Stop(c.kube()) }()
	c.out.AwaitContains(t, 5*time.Second, `"draining: the app keeps serving"`)
	_ = c.Signal(syscall.SIGTERM) // a second stopper
	r := <-done
	got := c.out.AwaitContains(t, time.Second, "got app SIGTERM")
	if d := got.At.Sub(r.SignalAt); d > 1500*time.Millisecond+slack {
		t.Errorf("stop signal %v after the first SIGTERM: the second restarted the drain", d)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
		t.Errorf("offline hook ran %d times, want once", strings.Count(string(b), "run"))
	}
	if c.out.Count(lines.Containing("got app SIGTERM")) != 1 {
		t.Errorf("the app got the stop signal %d times, want once", c.out.Count(lines.Containing("got app SIGTERM")))
	}
}

func TestDockerStopShape(t *testing.T) {
	// docker stop -t 10: SIGTERM, SIGKILL after 10 s, no preStop. drainit's defaults fit in it.
	c := startDrainit(t, nil, "--grace-period", "10s", "--", bins.TestApp, "slow-stop", "200ms")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	r := Pod{Grace: 10 * time.Second}.Stop(c.kube())
	got := c.out.AwaitContains(t, time.Second, "got app SIGTERM")
	if d := got.At.Sub(r.SignalAt); d < 5*time.Second-slack/10 {
		t.Errorf("the app got SIGTERM after %v, before the default 5s drain", d)
	}
	if r.Killed || c.status(t) != 0 {
		t.Error("the stop did not complete within docker's timeout")
	}
}

// --- preStop forms (issue 4) ---

func httpGetPreStop(addr, token string) *PreStop {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return &PreStop{HTTPGet: "http://" + addr + "/prestop", Headers: h}
}

func TestPreStopForms(t *testing.T) {
	forms := map[string]func(addr string) *PreStop{
		"httpGet":         func(addr string) *PreStop { return httpGetPreStop(addr, "") },
		"exec prestop":    func(addr string) *PreStop { return &PreStop{Exec: []string{bins.Drainit, "prestop", "--addr", addr}} },
		"exec sleep 1500": func(string) *PreStop { return &PreStop{Exec: []string{bins.Drainit, "sleep", "1500ms"}} },
	}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			addr := testenv.FreeLoopbackAddr(t)
			count := filepath.Join(t.TempDir(), "runs")
			drain := "1500ms"
			if strings.HasPrefix(name, "exec sleep") {
				drain = "0s" // the sleep is the drain
			}
			c := startDrainit(t, nil, "--grace-period", "10s", "--drain-delay", drain, "--http-addr", addr,
				"--offline-exec", fmt.Sprintf(`["/bin/sh","-c","echo run >> %s"]`, count),
				"--", bins.TestApp, "slow-stop", "100ms")
			c.out.AwaitContains(t, 10*time.Second, "ready app")
			r := Pod{Grace: 10 * time.Second, PreStop: form(addr)}.Stop(c.kube())
			if r.PreStopErr != nil || r.PreStopTimedOut {
				t.Fatalf("preStop: %v (timed out: %v)", r.PreStopErr, r.PreStopTimedOut)
			}
			if w := r.PreStopEnd.Sub(r.Deleted); w < 1500*time.Millisecond-slack/10 {
				t.Errorf("preStop returned after %v, before the 1.5s drain", w)
			}
			got := c.out.AwaitContains(t, 2*time.Second, "got app SIGTERM")
			if got.At.Before(r.SignalAt) {
				t.Error("the app got SIGTERM before the kubelet sent it")
			}
			if d := got.At.Sub(r.SignalAt); d > slack {
				t.Errorf("the app got SIGTERM %v after the kubelet's: the drain ran twice", d)
			}
			if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
				t.Errorf("offline hook ran %d times, want once", strings.Count(string(b), "run"))
			}
			if r.Killed || c.status(t) != 0 {
				t.Error("the stop did not end before the deadline")
			}
		})
	}
}

func TestConcurrentPrestopsOneSequence(t *testing.T) {
	addr := testenv.FreeLoopbackAddr(t)
	count := filepath.Join(t.TempDir(), "runs")
	c := startDrainit(t, nil, "--grace-period", "10s", "--drain-delay", "1s", "--http-addr", addr,
		"--offline-exec", fmt.Sprintf(`["/bin/sh","-c","echo run >> %s"]`, count),
		"--", bins.TestApp, "slow-stop", "0s")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	type answer struct {
		code int
		at   time.Time
		err  error
	}
	call := func() answer {
		resp, err := http.Post("http://"+addr+"/prestop", "", nil)
		if err != nil {
			return answer{err: err}
		}
		resp.Body.Close()
		return answer{code: resp.StatusCode, at: time.Now()}
	}
	start := time.Now()
	answers := make(chan answer, 2)
	go func() { answers <- call() }()
	go func() { answers <- call() }()
	for range 2 {
		a := <-answers
		if a.err != nil || a.code != 200 {
			t.Fatalf("/prestop: %d %v", a.code, a.err)
		}
		if d := a.at.Sub(start); d < time.Second-slack/10 {
			t.Errorf("/prestop answered after %v, before the 1s drain", d)
		}
	}
	third := time.Now()
	if a := call(); a.err != nil || a.code != 200 || a.at.Sub(third) > slack {
		t.Errorf("/prestop after the drain: %d %v after %v, want 200 at once", a.code, a.err, a.at.Sub(third))
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
		t.Errorf("offline hook ran %d times, want once", strings.Count(string(b), "run"))
	}
	if c.out.Count(lines.Containing("got app SIGTERM")) != 0 {
		t.Error("the app was stopped before any stop signal came")
	}
}

func TestWrongTokenLeavesAppServing(t *testing.T) {
	addr := testenv.FreeLoopbackAddr(t)
	c := startDrainit(t, []string{"DRAINIT_HTTP_TOKEN=tok-7f3a9c"}, "--http-addr", addr, "--", bins.TestApp, "slow-stop", "0s")
	c.out.AwaitContains(t, 10*time.Second, "ready app")
	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/prestop", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("Authorization %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz after refused /prestops = %d, want 200: nothing may have started", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/status", nil)
	req.Header.Set("Authorization", "Bearer tok-7f3a9c")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Phase    string `json:"phase"`
		Draining bool   `json:"draining"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if st.Phase != "running" || st.Draining {
		t.Errorf("status after refused /prestops: %+v", st)
	}
	if strings.Contains(c.out.String(), "tok-7f3a9c") {
		t.Error("the token appears in the log")
	}
}

// TestReadinessFollowsProbeAndOnlineHooks: /readyz is 503 until the ready probe passes and the
// online hooks have run, 200 then, and 503 again from the first trigger on, while /healthz stays
// 200 as long as the app runs.
func TestReadinessFollowsProbeAndOnlineHooks(t *testing.T) {
	addrs := testenv.FreeLoopbackAddrs(t, 2)
	ctl, app := addrs[0], addrs[1]
	marker := filepath.Join(t.TempDir(), "registered")
	c := startDrainit(t, nil, "--http-addr", ctl, "--ready-probe", "tcp://"+app, "--drain-delay", "2s",
		"--online-exec", fmt.Sprintf(`["/bin/sh","-c","sleep 0.3; echo yes > %s"]`, marker),
		"--", "/bin/sh", "-c", "sleep 0.5; exec "+bins.TestApp+" serve -addr "+app+" -graceful")
	get := func(path string) int {
		resp, err := http.Get("http://" + ctl + path)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor := func(path string, code int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for get(path) != code {
			if time.Now().After(deadline) {
				t.Fatalf("%s never answered %d (last %d)", path, code, get(path))
			}
			time.Sleep(10 * time.Millisecond) // polling an HTTP endpoint, bounded by the deadline
		}
	}
	waitFor("/healthz", 200)
	if code := get("/readyz"); code != 503 {
		t.Fatalf("/readyz = %d before the app listens, want 503", code)
	}
	waitFor("/readyz", 200)
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "yes" {
		t.Fatalf("/readyz turned 200 before the online hook had run: %v", err)
	}
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor("/readyz", 503)
	if code := get("/healthz"); code != 200 {
		t.Errorf("/healthz = %d during the drain, want 200 (the app still runs)", code)
	}
	if s := c.status(t); s != 0 {
		t.Errorf("exit status %d", s)
	}
}

// The app exits on its own and a slow post-stop hook runs; the pod is deleted meanwhile. Nothing
// is left to drain, but the kubelet's grace period runs from its SIGTERM: drainit cuts the hook
// short and exits with the app's status before the kubelet has to SIGKILL it.
func TestPodDeletedDuringPostStopHooks(t *testing.T) {
	c := startDrainit(t, nil, "--grace-period", "4s", "--drain-delay", "1s", "--kill-margin", "1s", "--hook-timeout", "30s",
		"--post-stop-exec", bins.TestApp+" sleep 30s", "--", bins.TestApp, "exit", "3")
	c.out.AwaitContains(t, 10*time.Second, "running post-stop hooks")
	stopInTime(t, c, 4*time.Second, 3) // the app's status
	c.out.AwaitContains(t, time.Second, "stop requested after the app exited")
}
