package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/cluster"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/drainwatch"
)

// The whole stop on real parts: a kubelet registered with a real API server runs the pods on
// containerd, probes drainit's /readyz and calls its /prestop; the EndpointSlice controller and
// kube-proxy (integration/cluster) route a Service's connections by what the kubelet reports.
// Nothing in the chain is written by the test but the pods, the Service and the DELETE.

const (
	clusterQuiet = 500 * time.Millisecond // drainit's fixed --drain-quiet in these pods (beside auto)
	// How long the drain may go on after the later of the pod's last connection and /prestop,
	// beyond its quiet period (0.5 s, or the silence auto needed at the rate it saw): the
	// watcher's polls and a loaded machine's scheduling.
	clusterSlack = 1500 * time.Millisecond
	controlPort  = 8099
)

// startClusterNode starts a second containerd and kubelet, in the control plane's network
// namespace, registered with its API server as its node: its pods' IP is the node's, the address
// kube-proxy routes the Service to. It is stopped when the test ends.
func startClusterNode(t testing.TB, c *cluster.Cluster) *node {
	t.Helper()
	runc, err := testenv.LookPath("runc")
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubeletBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "drainit-node-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	n := &node{ctr: suite.ctr, dir: dir, netns: c.NS, name: cluster.NodeName,
		client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: c.Dial}}}
	n.sock = filepath.Join(dir, "containerd.sock")
	n.containerdLog = filepath.Join(dir, "containerd.log")
	n.kubeletLog = filepath.Join(dir, "kubelet.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the cluster node's kubelet log ends:\n%s", tail(n.kubeletLog))
		}
		removePods(c)
		if err := n.tearDown(); err != nil {
			t.Errorf("stopping the cluster node: %v", err)
		}
	})
	for _, d := range []string{"manifests", "pod-logs", "cni/conf"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writePodNetwork(t, dir)
	if err := n.startContainerd(runc); err != nil {
		t.Fatal(err)
	}
	if err := n.importImages(suite.dir); err != nil {
		t.Fatal(err)
	}
	if n.sysctls, err = readSysctls(); err != nil {
		t.Fatal(err)
	}
	if err := n.startKubelet(kubelet, "--kubeconfig", c.Kubeconfig(), "--node-ip", cluster.NodeIP); err != nil {
		t.Fatal(err)
	}
	return n
}

// removePods deletes the pods left and waits, for a while, until the kubelet has removed them: it
// then has stopped their sandboxes, and the CNI plugin has taken down their networks and the
// entries it keeps in /var/lib/cni, which killing the containers behind the kubelet's back would
// leave.
func removePods(c *cluster.Cluster) {
	if !deleteAndWait(c, "/api/v1/namespaces/default/pods?gracePeriodSeconds=1", 30*time.Second, func() bool {
		var list struct{ Items []struct{} }
		_, b, err := c.API("GET", "/api/v1/namespaces/default/pods", "")
		return err == nil && json.Unmarshal(b, &list) == nil && len(list.Items) == 0
	}) {
		c.T.Errorf("pods still there 30 s after their deletion: their networks may be left behind")
	}
}

// deletePod deletes the pod name, if it is still there, and waits until the API has no more of it
// (the kubelet has stopped its containers and taken down its network), for a minute at most.
func deletePod(c *cluster.Cluster, name string) error {
	path := "/api/v1/namespaces/default/pods/" + name
	if !deleteAndWait(c, path, time.Minute, func() bool {
		code, _, err := c.API("GET", path, "")
		return err == nil && code == http.StatusNotFound
	}) {
		return fmt.Errorf("pod %s still there a minute after its deletion", name)
	}
	return nil
}

// deleteAndWait sends a DELETE of path to the API and polls until gone holds, for within at most;
// it reports whether gone held. It does not end the test: clean-ups call it.
func deleteAndWait(c *cluster.Cluster, path string, within time.Duration, gone func() bool) bool {
	_, _, _ = c.API("DELETE", path, "")
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		if gone() {
			return true
		}
		time.Sleep(100 * time.Millisecond) // polling the API: a watch is more than this needs
	}
	return false
}

// podSubnet is the pods' network: each pod gets an address of it on a veth pair to the node's
// namespace (CNI's ptp plugin, from Debian's containernetworking-plugins), so that it has a
// network namespace of its own, as a pod on a cluster's network does.
const podSubnet = "10.88.7.0/24"

// writePodNetwork writes the CNI configuration containerd reads for the cluster node's pods; the
// addresses it hands out are kept in the node's directory (CNI's cache of results stays in
// /var/lib/cni: removePods has the kubelet clear it).
func writePodNetwork(t testing.TB, dir string) {
	t.Helper()
	plugins := "/usr/lib/cni" // Debian's place for them, not on PATH
	if p, err := testenv.LookPath("ptp"); err == nil {
		plugins = filepath.Dir(p)
	}
	if _, err := os.Stat(filepath.Join(plugins, "ptp")); err != nil {
		testenv.SkipUnlessCI(t, "no CNI ptp plugin (Debian: apt-get install --no-install-recommends containernetworking-plugins)")
	}
	if err := os.Symlink(plugins, filepath.Join(dir, "cni", "bin")); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "drainit-pods", "plugins": [{"type": "ptp",
		"ipam": {"type": "host-local", "subnet": %q, "routes": [{"dst": "0.0.0.0/0"}], "dataDir": %q}}]}`,
		podSubnet, filepath.Join(dir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(dir, "cni", "conf", "10-pods.conflist"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
}

// apiPod is a pod made through the API on the cluster node, on the pod network: the app's port
// named http for the Service, a readiness probe, and any native sidecars (initContainers with
// restartPolicy: Always), which share its network namespace.
func apiPod(t testing.TB, name string, port int, c container, readyPath string, readyPort int, sidecars ...container) string {
	t.Helper()
	spec := c.manifest(imageTerm, fmt.Sprintf(":%d", controlPort), controlPort)
	if l, ok := spec["lifecycle"].(map[string]any); ok {
		if hook, ok := l["preStop"].(map[string]any); ok {
			if get, ok := hook["httpGet"].(map[string]any); ok {
				// The kubelet calls the pod's IP: 127.0.0.1 is the node's loopback, not the pod's.
				delete(get, "host")
			}
		}
	}
	spec["ports"] = []any{map[string]any{"name": "http", "containerPort": port}}
	spec["readinessProbe"] = map[string]any{
		"httpGet":       map[string]any{"path": readyPath, "port": readyPort},
		"periodSeconds": 1, "failureThreshold": 1,
	}
	podSpec := map[string]any{"nodeName": cluster.NodeName, "terminationGracePeriodSeconds": 30, "containers": []any{spec}}
	var inits []any
	for _, s := range sidecars {
		sc := s.manifest(imageTerm, "", 0)
		sc["restartPolicy"] = "Always"
		inits = append(inits, sc)
	}
	if inits != nil {
		podSpec["initContainers"] = inits
	}
	b, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": name, "labels": map[string]string{"app": "web"}},
		"spec":     podSpec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// drainitPod is drainit with an adaptive drain (--drain-quiet quiet) in front of the test app on
// port 18080, with an httpGet preStop to /prestop and its readiness probe on /readyz, and any
// sidecars; it returns the app's log and the pod's IP.
func drainitPod(c *cluster.Cluster, n *node, quiet string, sidecars ...container) (*containerLog, string) {
	return n.apiStart(c, "web-a", apiPod(c.T, "web-a", 18080, container{name: "app",
		env: map[string]string{"DRAINIT_DRAIN": "adaptive", "DRAINIT_DRAIN_QUIET": quiet,
			"DRAINIT_DRAIN_MAX": "20s", "DRAINIT_GRACE_PERIOD": "30s"},
		app: []string{"serve", "-addr", ":18080", "-graceful"}, preStop: "httpGet"}, "/readyz", controlPort, sidecars...))
}

// meshSidecar is a native sidecar listening in the pod's network namespace, as a mesh proxy's
// inbound and outbound ports are (Istio's 15006 and 15001), or an exporter's.
var meshSidecar = container{name: "mesh", noDrainit: true, app: []string{"serve", "-addr", ":15006", "-graceful", "-name", "mesh"}}

// plainPod is the test app alone on port 18081; it returns the pod's IP.
func plainPod(c *cluster.Cluster, n *node) string {
	_, ip := n.apiStart(c, "web-b", apiPod(c.T, "web-b", 18081, container{name: "app", noDrainit: true,
		app: []string{"serve", "-addr", ":18081", "-graceful", "-name", "web-b"}}, "/", 18081))
	return ip
}

// apiStart makes the pod through the API and waits until the kubelet runs it and reports it
// ready; it returns its container's log, opened before the kubelet can delete it, and its IP.
func (n *node) apiStart(c *cluster.Cluster, name, body string) (*containerLog, string) {
	c.T.Helper()
	var pod struct {
		Metadata struct{ UID string }
	}
	if err := json.Unmarshal(c.Must("POST", "/api/v1/namespaces/default/pods", body), &pod); err != nil {
		c.T.Fatal(err)
	}
	var ip string
	c.WaitFor(name+" to be ready", 90*time.Second, func() bool {
		var got struct {
			Status struct {
				PodIP      string
				Conditions []struct{ Type, Status string }
			}
		}
		_, b, err := c.API("GET", "/api/v1/namespaces/default/pods/"+name, "")
		if err != nil || json.Unmarshal(b, &got) != nil {
			return false
		}
		ip = got.Status.PodIP
		for _, cond := range got.Status.Conditions {
			if cond.Type == "Ready" && cond.Status == "True" {
				return true
			}
		}
		return false
	})
	f, err := os.Open(filepath.Join(n.dir, "pod-logs", fmt.Sprintf("default_%s_%s", name, pod.Metadata.UID), "app", "0.log"))
	if err != nil {
		c.T.Fatalf("opening %s's log: %v", name, err)
	}
	c.T.Cleanup(func() { f.Close() })
	return &containerLog{f: f}, ip
}

// drain is what drainit's log says of its adaptive drain: when /prestop started it, when it
// ended, and why.
type drain struct {
	start, end time.Time
	reason     string
	needed     time.Duration // the silence --drain-quiet auto needed; 0 with a fixed quiet period
}

// drained waits for drainit's log to say that /prestop started the drain and that it ended.
func drained(t testing.TB, log *containerLog) drain {
	t.Helper()
	var d drain
	d.start, _ = logEvent(t, log, "stop sequence started by /prestop")
	var over map[string]any
	d.end, over = logEvent(t, log, "adaptive drain over")
	d.reason, _ = over["reason"].(string)
	ms, _ := over["silence_needed"].(float64)
	d.needed = time.Duration(ms * float64(time.Millisecond))
	return d
}

// logEvent waits for drainit's line with message in log, and returns its time and fields.
func logEvent(t testing.TB, log *containerLog, message string) (time.Time, map[string]any) {
	t.Helper()
	l := log.await(t, 30*time.Second, message, func(l logLine) bool {
		return strings.Contains(l.text, `"message":"`+message+`"`)
	})
	var fields map[string]any
	if err := json.Unmarshal([]byte(l.text), &fields); err != nil {
		t.Fatalf("drainit's line %q: %v", l.text, err)
	}
	s, _ := fields["time"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("drainit's line %q: its time: %v", l.text, err)
	}
	return at, fields
}

// endedQuiet fails the test unless the drain ended for the quiet, after the pod's last connection,
// and within its quiet period and clusterSlack of that connection or of its own start, the
// later. auto's quiet period is the silence it logged it needed: it follows the rate it saw, and
// a pod deleted soon after its first connections gives it few to judge by (11 arrivals, judged
// at a lower bound of 8.3 a second, needed 2.2 s on a loaded CI machine).
func (d drain) endedQuiet(t *testing.T, last time.Time) {
	t.Helper()
	if d.reason != "quiet" {
		t.Errorf("the drain ended %q, want quiet", d.reason)
	}
	from := last
	if d.start.After(last) {
		from = d.start // the kubelet's preStop came after the connections had stopped
	}
	// drainit's log times are in milliseconds.
	bound := clusterQuiet + clusterSlack
	if d.needed > 0 {
		bound = d.needed + clusterSlack
	}
	if d.end.Before(last.Add(-time.Millisecond)) || d.end.Sub(from) > bound {
		t.Errorf("the drain ended %v after the pod's last connection and %v after it began, want after the connection and within %v of the later",
			d.end.Sub(last), d.end.Sub(d.start), bound)
	}
}

// exitedZero waits for drainit's last line and fails the test unless it exits 0.
func exitedZero(t testing.TB, log *containerLog) {
	t.Helper()
	l := log.await(t, 30*time.Second, "drainit's exit", func(l logLine) bool {
		return strings.Contains(l.text, `"drainit exiting"`)
	})
	if !strings.Contains(l.text, `"status":0`) || !strings.Contains(l.text, "exit 0") {
		t.Errorf("drainit did not exit 0: %s", l.text)
	}
}

// serveThroughService starts the cluster and its node, the Service, drainit's pod a (with the
// quiet period given) and, with two, the plain pod b, and a load through the Service that each
// pod has served; it returns a's log and answer, and the load.
func serveThroughService(t *testing.T, two bool, quiet string) (*cluster.Cluster, *containerLog, string, *cluster.Load) {
	t.Helper()
	need(t)
	c := cluster.Start(t)
	n := startClusterNode(t, c)
	ip := c.Service()
	log, ipA := drainitPod(c, n, quiet)
	answers := []string{c.Answer(ipA, 18080)}
	if two {
		answers = append(answers, c.Answer(plainPod(c, n), 18081))
	}
	return c, log, answers[0], c.LoadServedBy("http://"+ip+"/", answers...)
}

// deleteDrainitPod deletes pod a through the API, as kubectl delete does, and waits for its
// drain to end and drainit to exit 0; it returns when the DELETE was sent, and the drain.
func deleteDrainitPod(t *testing.T, c *cluster.Cluster, log *containerLog) (time.Time, drain) {
	t.Helper()
	t0 := time.Now()
	c.Must("DELETE", "/api/v1/namespaces/default/pods/web-a", "")
	d := drained(t, log)
	exitedZero(t, log)
	return t0, d
}

// eachQuiet runs a test with a fixed quiet period of 0.5 s and with --drain-quiet auto, which
// here reads the rate before the drain from the pod's own namespace (each pod has one).
func eachQuiet(t *testing.T, test func(t *testing.T, quiet string)) {
	for _, quiet := range []string{clusterQuiet.String(), "auto"} {
		t.Run("quiet="+quiet, func(t *testing.T) { test(t, quiet) })
	}
}

// A pod deleted while another pod of its Service is ready: the kubelet calls /prestop, drainit
// turns not ready and drains, the pod leaves the Service's endpoints, its connections stop, the
// drain ends a quiet period after the last, and the kubelet's SIGTERM ends it with 0. No request
// fails.
func TestClusterDeleteWhileAnotherServes(t *testing.T) {
	eachQuiet(t, deleteWhileAnotherServes)
}

func deleteWhileAnotherServes(t *testing.T, quiet string) {
	c, log, a, l := serveThroughService(t, true, quiet)
	defer l.End()
	t0, d := deleteDrainitPod(t, c, log)
	l.End()
	if _, failed := l.Count("", time.Time{}); failed > 0 {
		t.Errorf("%d requests failed, want none:\n%s", failed, strings.Join(l.Errs(), "\n"))
	}
	lastA := l.Last(a)
	t.Logf("after the DELETE: a's last connection %v, /prestop %v, the drain's end %v", lastA.Sub(t0), d.start.Sub(t0), d.end.Sub(t0))
	d.endedQuiet(t, lastA)
}

// drainit's pod has a native sidecar that listens in its network namespace (a mesh proxy). The
// namespace's PassiveOpens counter is then not the app's alone, and --drain-quiet auto used to
// have no history before the drain, judge the drain's few own arrivals and wait for --drain-max
// (20 s). The history of the app's own listeners gives it the rate: the drain ends quiet, after
// the pod's last connection and well within the bound, no request failing.
func TestClusterAutoBesideASidecar(t *testing.T) {
	need(t)
	c := cluster.Start(t)
	n := startClusterNode(t, c)
	ip := c.Service()
	log, ipA := drainitPod(c, n, "auto", meshSidecar)
	a := c.Answer(ipA, 18080)
	l := c.LoadServedBy("http://"+ip+"/", a, c.Answer(plainPod(c, n), 18081))
	defer l.End()
	t0, d := deleteDrainitPod(t, c, log)
	l.End()
	_, found := logEvent(t, log, "adaptive drain: listeners found")
	if _, failed := l.Count("", time.Time{}); failed > 0 {
		t.Errorf("%d requests failed, want none:\n%s", failed, strings.Join(l.Errs(), "\n"))
	}
	_, over := logEvent(t, log, "adaptive drain over")
	lastA := l.Last(a)
	t.Logf("after the DELETE: a's last connection %v, /prestop %v, the drain's end %v; %v; %v", lastA.Sub(t0), d.start.Sub(t0), d.end.Sub(t0), found, over)
	notWatched, _ := found["not_watched"].(map[string]any) // {"why": [listener, …]}
	if !strings.Contains(fmt.Sprint(notWatched["not the app's"]), ":15006") {
		t.Errorf("listeners not watched %v, want the sidecar's :15006", found["not_watched"])
	}
	if over["method"] != "sock-diag" || over["history_from"] != "app-listeners" {
		t.Errorf("the drain counted with %v, history from %v: want sock-diag, the app's listeners", over["method"], over["history_from"])
	}
	// The rate rests on the history: as many of the pod's connections before the DELETE as the
	// estimate uses (drainwatch.AutoMinArrivals), or at least half of them when there were fewer.
	// Without the history it judged the drain's few own arrivals and waited for --drain-max.
	before, _ := l.Count(a, time.Time{})
	after, _ := l.Count(a, t0)
	arrivals, _ := over["rate_arrivals"].(float64)
	if want := min(drainwatch.AutoMinArrivals, (before-after)/2); int(arrivals) < want {
		t.Errorf("the rate was judged on %v arrivals, want %d or more: the pod had %d connections before the DELETE", arrivals, want, before-after)
	}
	d.endedQuiet(t, lastA)
}

// The Service's last ready pod, deleted: kube-proxy goes on routing to it while its Ready
// condition holds; drainit's /readyz fails from the /prestop call, the kubelet's next probe turns
// the pod not ready, the connections stop and the drain ends a quiet period later, well before
// --drain-max, and drainit exits 0. Every connection the pod got was served.
func TestClusterLastPodUntilNotReady(t *testing.T) {
	eachQuiet(t, lastPodUntilNotReady)
}

func lastPodUntilNotReady(t *testing.T, quiet string) {
	c, log, a, l := serveThroughService(t, false, quiet)
	defer l.End()
	t0, d := deleteDrainitPod(t, c, log)
	l.End()
	last := l.Last(a)
	t.Logf("after the DELETE: the pod's last connection %v, /prestop %v, the drain's end %v", last.Sub(t0), d.start.Sub(t0), d.end.Sub(t0))
	// Connections go on until the kubelet's probe (period 1 s) has failed after /prestop and
	// kube-proxy has acted: the drain, not a quiet period that the routing never gave it, ends
	// the stop.
	if last.Before(d.start) {
		t.Errorf("the pod's connections stopped %v before /prestop: the Service's last ready pod is routed to until it is not ready", d.start.Sub(last))
	}
	d.endedQuiet(t, last)
	// Requests that began before the pod's last one were all routed to it: none may fail. After
	// it, the Service has no ready endpoint and connections fail at kube-proxy, by design.
	if n := l.FailedBy(last); n > 0 {
		t.Errorf("%d requests that began before the pod's last connection failed:\n%s", n, strings.Join(l.Errs(), "\n"))
	}
}
