package cluster

import (
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// servePods starts pod a, drainit with an adaptive drain (quiet 0.5 s) in front of the test app
// on port 18080, and, with two, pod b, the test app alone on 18081; it returns drainit, a load
// through the Service that each pod has served, each pod's answer and drainit's /prestop URL.
func (c *Cluster) servePods(two bool) (drainit *Prog, l *Load, answers []string, prestop string) {
	c.Pod("web-a", 18080)
	drainit = c.Run("drainit", c.Bins.Drainit, "--drain", "adaptive", "--drain-quiet", quiet.String(), "--drain-max", "20s",
		"--grace-period", "30s", "--http-addr", "127.0.0.1:8099", "--",
		c.Bins.TestApp, "serve", "-addr", ":18080", "-graceful")
	answers = []string{c.Answer(NodeIP, 18080)}
	if two {
		c.Pod("web-b", 18081)
		c.Run("app-b", c.Bins.TestApp, "serve", "-addr", ":18081", "-graceful")
		answers = append(answers, c.Answer(NodeIP, 18081))
	}
	l = c.LoadServedBy("http://"+c.Service()+"/", answers...)
	return drainit, l, answers, "http://127.0.0.1:8099/prestop"
}

// quiet is drainit's --drain-quiet in these tests.
const quiet = 500 * time.Millisecond

// slack is what the adaptive drain may take beyond its quiet period after the last connection:
// the watcher's polls and a loaded machine's scheduling.
const slack = 1500 * time.Millisecond

// drainEnd waits for the /prestop call to return, the drain's end, for at most within after what.
func (c *Cluster) drainEnd(done <-chan time.Time, within time.Duration, what string) time.Time {
	c.T.Helper()
	select {
	case end := <-done:
		return end
	case <-time.After(within):
		c.T.Fatalf("the drain did not end within %v of %s\n%s", within, what, c.Log("drainit"))
		return time.Time{}
	}
}

// endedQuiet fails the test unless the drain ended after drainit's last connection, within the
// quiet period and slack of it, and said it ended for the quiet.
func (c *Cluster) endedQuiet(end, last time.Time) {
	c.T.Helper()
	if d := end.Sub(last); d < 0 || d > quiet+slack {
		c.T.Errorf("the drain ended %v after the pod's last connection, want between 0 and the quiet period %v and %v", d, quiet, slack)
	}
	if log := c.Log("drainit"); !strings.Contains(log, `"reason":"quiet"`) {
		c.T.Errorf("the drain did not end quiet\n%s", log)
	}
}

// terminate sends drainit SIGTERM, as the kubelet does once the preStop hook has returned, and
// fails the test unless drainit stops its app and exits 0 within the grace period's first 10 s:
// the drain is over, so nothing is left to wait for but the app's own shutdown.
func (c *Cluster) terminate(drainit *Prog) {
	c.T.Helper()
	if err := drainit.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.T.Fatalf("SIGTERM to drainit: %v", err)
	}
	select {
	case <-drainit.Exited:
	case <-time.After(10 * time.Second):
		c.T.Fatalf("drainit did not exit within 10 s of SIGTERM after its drain\n%s", c.Log("drainit"))
	}
	if code := drainit.Cmd.ProcessState.ExitCode(); code != 0 {
		c.T.Errorf("drainit exited %d, want the app's 0\n%s", code, c.Log("drainit"))
	}
}

// deleteAndPrestop deletes the pod and calls drainit's /prestop at once, as the kubelet's httpGet
// preStop does; the channel gets the time the call returned (the drain's end).
func (c *Cluster) deleteAndPrestop(pod, prestop string) (time.Time, <-chan time.Time) {
	t0 := time.Now()
	c.Must("DELETE", "/api/v1/namespaces/default/pods/"+pod, "")
	done := make(chan time.Time, 1)
	go func() {
		req, _ := http.NewRequest("GET", prestop, nil)
		req.Header.Set("User-Agent", "kube-lifecycle/1.33")
		client := &http.Client{Transport: &http.Transport{DialContext: c.Dial}}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
		done <- time.Now()
	}()
	return t0, done
}

// The deleted pod stops getting connections through the Service once the endpointslice
// controller and kube-proxy have acted, while another pod is ready, and the adaptive drain ends
// a quiet period after that: nothing failed, and the drain is far shorter than a fixed one.
func TestDeletedPodDrainsWhileAnotherServes(t *testing.T) {
	c := Start(t)
	drainit, l, answers, prestop := c.servePods(true)
	defer l.End()
	t0, done := c.deleteAndPrestop("web-a", prestop)
	end := c.drainEnd(done, 15*time.Second, "the deletion")
	c.terminate(drainit)
	l.End()
	if _, failed := l.Count("", time.Time{}); failed > 0 {
		t.Errorf("%d requests failed (the deletion at %s), want none:\n%s\n%s", failed, t0.Format("15:04:05.000"), strings.Join(l.Errs(), "\n"), c.Log("drainit"))
	}
	lastA := l.Last(answers[0])
	t.Logf("last connection to a %v after the DELETE began; drain ended %v after it", lastA.Sub(t0), end.Sub(t0))
	c.endedQuiet(end, lastA)
}

// The Service's last ready pod goes on getting connections after its deletion for as long as its
// Ready condition holds (kube-proxy routes to terminating pods that still serve when none is
// ready), so the adaptive drain does not end; once the kubelet would have seen /readyz fail
// (Ready false), the connections stop and the drain ends a quiet period later.
func TestLastPodRoutedUntilNotReady(t *testing.T) {
	c := Start(t)
	drainit, l, answers, prestop := c.servePods(false)
	defer l.End()
	t0, done := c.deleteAndPrestop("web-a", prestop)
	hold := 3 * time.Second
	select {
	case end := <-done:
		t.Fatalf("the drain ended %v after the deletion, with the pod still routed to\n%s", end.Sub(t0), c.Log("drainit"))
	case <-time.After(hold):
	}
	if served, failed := l.Count("", t0.Add(hold-time.Second)); served < 20 || failed > 0 {
		t.Errorf("in the last second before Ready turned false: %d served, %d failed; want connections still routed to the terminating pod, none failed", served, failed)
	}
	tReady := time.Now()
	c.NotReady("web-a")
	end := c.drainEnd(done, 10*time.Second, "Ready turning false")
	c.terminate(drainit)
	l.End()
	t.Logf("drain ended %v after Ready turned false (%v after the deletion)", end.Sub(tReady), end.Sub(t0))
	c.endedQuiet(end, l.Last(answers[0]))
}
