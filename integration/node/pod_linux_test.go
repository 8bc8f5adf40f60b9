package node

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pod is one test's static pod: a container, "app", running drainit (the image's ENTRYPOINT) in
// front of testapp, configured with DRAINIT_* variables as Dockerfile.example does, and any native
// sidecars.
type pod struct {
	name    string
	image   string
	grace   int               // terminationGracePeriodSeconds
	env     map[string]string // DRAINIT_* (DRAINIT_HTTP_ADDR is added: each pod gets a free port)
	app     []string          // testapp's arguments
	preStop string            // "", "httpGet" (/prestop), "exec" (drainit prestop) or "sleep D" (drainit sleep D)
	// sidecars are native sidecars (initContainers with restartPolicy: Always), in the order
	// declared.
	sidecars []container
	// sharePID is spec.shareProcessNamespace: the containers share one PID namespace, whose
	// PID 1 is the sandbox's process.
	sharePID bool
}

// container is one of the pod's containers: drainit in front of testapp, on the pod's image, or
// testapp alone (noDrainit). A sidecar has no control server (the pod's network is the node's:
// one port would clash), so its preStop is "" or "sleep D".
type container struct {
	name      string
	env       map[string]string
	app       []string
	preStop   string
	noDrainit bool // the container runs testapp itself (command), without drainit in front
}

// names are the pod's containers: "app", then the sidecars.
func (p pod) names() []string {
	names := []string{"app"}
	for _, s := range p.sidecars {
		names = append(names, s.name)
	}
	return names
}

// manifest is the pod as the kubelet reads it from its static-pod directory (JSON is YAML).
func (p pod) manifest(controlAddr string, controlPort int) []byte {
	spec := map[string]any{
		// No CNI on the test node; the control server listens on a free loopback port.
		"hostNetwork":                   true,
		"terminationGracePeriodSeconds": p.grace,
		"containers":                    []any{container{name: "app", env: p.env, app: p.app, preStop: p.preStop}.manifest(p.image, controlAddr, controlPort)},
	}
	if p.sharePID {
		spec["shareProcessNamespace"] = true
	}
	var inits []any
	for _, s := range p.sidecars {
		c := s.manifest(p.image, "", 0)
		c["restartPolicy"] = "Always"
		inits = append(inits, c)
	}
	if inits != nil {
		spec["initContainers"] = inits
	}
	b, err := json.MarshalIndent(map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": p.name, "namespace": "default"},
		"spec":       spec,
	}, "", "  ")
	if err != nil {
		panic(err) // only maps, strings and ints: cannot fail
	}
	return b
}

// manifest is the container's part of the pod's manifest; controlAddr "" leaves drainit's
// control server off.
func (c container) manifest(image, controlAddr string, controlPort int) map[string]any {
	type kv struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	var env []kv
	if controlAddr != "" {
		env = append(env, kv{"DRAINIT_HTTP_ADDR", controlAddr})
	}
	for k, v := range c.env {
		env = append(env, kv{k, v})
	}
	out := map[string]any{
		"name":            c.name,
		"image":           image,
		"imagePullPolicy": "Never",
		"args":            append([]string{"--", "/testapp"}, c.app...),
		"env":             env,
	}
	if c.noDrainit {
		out["command"], out["args"] = []string{"/testapp"}, c.app
	}
	var hook map[string]any
	switch {
	case c.preStop == "httpGet":
		hook = map[string]any{"httpGet": map[string]any{"host": "127.0.0.1", "port": controlPort, "path": "/prestop"}}
	case c.preStop == "exec":
		hook = map[string]any{"exec": map[string]any{"command": []string{"/drainit", "prestop"}}}
	case strings.HasPrefix(c.preStop, "kubelet-sleep "):
		// The kubelet's own sleep action (Kubernetes 1.30 and later): no program in the image.
		secs, err := strconv.Atoi(strings.TrimPrefix(c.preStop, "kubelet-sleep "))
		if err == nil {
			hook = map[string]any{"sleep": map[string]any{"seconds": secs}}
		}
	case strings.HasPrefix(c.preStop, "sleep "):
		// The image has no sleep(1): drainit's own, as README.md advises for scratch images.
		hook = map[string]any{"exec": map[string]any{"command": []string{"/drainit", "sleep", strings.TrimPrefix(c.preStop, "sleep ")}}}
	}
	if hook != nil {
		out["lifecycle"] = map[string]any{"preStop": hook}
	}
	return out
}

// running is a pod the kubelet has started, with its containers' logs followed from the start.
type running struct {
	n          *node
	pod        pod
	manifest   string // the path in the kubelet's static-pod directory
	spec       []byte // what was written there
	containers map[string]*runningContainer
	removedAt  time.Time
}

// runningContainer is one of a running pod's containers.
type runningContainer struct {
	id  string // containerd's
	log *containerLog
}

// start puts the pod's manifest into the kubelet's static-pod directory and waits until its
// containers run, their logs are open, and each app (and for a preStop, drainit's control
// server) is ready. The pod is removed when the test ends, if the test has not removed it.
func (n *node) start(t *testing.T, p pod) *running {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	r := &running{n: n, pod: p, manifest: filepath.Join(n.dir, "manifests", p.name+".json"), containers: map[string]*runningContainer{}}
	// Written elsewhere and renamed in: the kubelet may read a file in the directory half-written.
	staged := filepath.Join(n.dir, "staging", p.name+".json")
	r.spec = p.manifest(addr, ports[0])
	if err := os.WriteFile(staged, r.spec, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(staged, r.manifest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.removedAt.IsZero() {
			_ = os.Remove(r.manifest)
		}
		if t.Failed() {
			r.dump(t)
		}
	})
	uid := r.waitRunning(t, 90*time.Second)
	for _, name := range p.names() {
		c := r.containers[name]
		logPath := filepath.Join(n.dir, "pod-logs", fmt.Sprintf("default_%s-%s_%s", p.name, nodeName, uid), name, "0.log")
		// Opened now and read from the start: the kubelet deletes the directory when the pod
		// goes, and the open file stays readable.
		f, err := os.Open(logPath)
		if err != nil {
			t.Fatalf("opening container %s's log: %v", name, err)
		}
		t.Cleanup(func() { f.Close() })
		c.log = &containerLog{f: f}
		c.log.await(t, 30*time.Second, name+": the app ready", func(l logLine) bool {
			return l.stream == "stdout" && strings.HasPrefix(l.text, "ready app ")
		})
	}
	if p.preStop != "" {
		r.containers["app"].log.await(t, 30*time.Second, "drainit's control server", func(l logLine) bool {
			return strings.Contains(l.text, `"control server listening"`)
		})
	}
	return r
}

// waitRunning asks the kubelet's read-only API until every container of the pod runs, and
// returns the pod's UID.
func (r *running) waitRunning(t *testing.T, timeout time.Duration) string {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/pods", r.n.readOnlyPort)
	want := r.pod.name + "-" + nodeName
	deadline := time.Now().Add(timeout)
	type status struct {
		Name        string
		ContainerID string
		State       struct{ Running *struct{} }
	}
	for {
		var list struct {
			Items []struct {
				Metadata struct{ Name, UID string }
				Status   struct{ ContainerStatuses, InitContainerStatuses []status }
			}
		}
		if res, err := http.Get(url); err == nil {
			_ = json.NewDecoder(res.Body).Decode(&list) // an answer that does not decode: ask again
			res.Body.Close()
			for _, item := range list.Items {
				if item.Metadata.Name != want {
					continue
				}
				for _, cs := range append(item.Status.ContainerStatuses, item.Status.InitContainerStatuses...) {
					if cs.State.Running != nil && strings.HasPrefix(cs.ContainerID, "containerd://") {
						r.containers[cs.Name] = &runningContainer{id: strings.TrimPrefix(cs.ContainerID, "containerd://")}
					}
				}
				if len(r.containers) == len(r.pod.names()) {
					return item.Metadata.UID
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not running after %s; the kubelet's log ends:\n%s", want, timeout, tail(r.n.kubeletLog))
		}
		time.Sleep(100 * time.Millisecond) // polling the kubelet's API: it has no watch in standalone mode
	}
}

// remove deletes the pod's manifest: for the kubelet, the static pod is deleted.
func (r *running) remove(t *testing.T) {
	t.Helper()
	r.removedAt = time.Now()
	if err := os.Remove(r.manifest); err != nil {
		t.Fatal(err)
	}
}

// stopped is what the platform and the pod recorded about one container's stop.
type stopped struct {
	exit    taskEvent // containerd's /tasks/exit of the container
	app     []logLine // the app's stdout
	drainit []event   // drainit's JSON log lines (stderr)

	preStopAt   time.Time // the kubelet's "Running preStop hook"; zero without a hook
	preStopDone time.Time // its "PreStop hook completed"
	signalAt    time.Time // the kubelet's "Killing container with a grace period" (after the hook)
	grace       int       // … its gracePeriod: what the kubelet gives the runtime after the hook
	stopSignal  string    // containerd's "Stop container … with signal X": the signal it sent
	stopAfter   int       // containerd's "StopContainer … with timeout N (s)"
	runtimeKill bool      // containerd's "Kill container …": it SIGKILLed after the timeout
	killAt      time.Time // … when
}

// stop removes the pod and returns what was recorded about the app container's stop.
func (r *running) stop(t *testing.T) stopped {
	t.Helper()
	return r.stopAll(t)["app"]
}

// stopAll removes the pod, waits for each container to exit and its log to be complete, and
// returns what was recorded about each container's stop, by name.
func (r *running) stopAll(t *testing.T) map[string]stopped {
	t.Helper()
	r.remove(t)
	return r.awaitStopped(t)
}

// awaitStopped waits, once the pod has been removed, for each container to exit and its log to be
// complete, and returns what was recorded about each container's stop, by name.
func (r *running) awaitStopped(t *testing.T) map[string]stopped {
	t.Helper()
	timeout := time.Duration(r.pod.grace)*time.Second + 30*time.Second
	deadline := r.removedAt.Add(timeout)
	out := map[string]stopped{}
	for name, c := range r.containers {
		exit, ok := r.n.events.wait("/tasks/exit", c.id, time.Until(deadline))
		if !ok {
			t.Fatalf("container %s (%.12s) did not exit within %s of the pod's removal", name, c.id, timeout)
		}
		// containerd deletes the task once the shim has copied the last of its output to the log.
		if _, ok := r.n.events.wait("/tasks/delete", c.id, 30*time.Second); !ok {
			t.Fatalf("containerd did not delete the task of container %s (%.12s) within 30s of its exit", name, c.id)
		}
		out[name] = c.stopped(t, r.n, exit)
	}
	return out
}

// stopped reads the container's log and the kubelet's and containerd's lines about it.
func (c *runningContainer) stopped(t *testing.T, n *node, exit taskEvent) stopped {
	t.Helper()
	s := stopped{exit: exit}
	c.log.read()
	for _, l := range c.log.lines {
		switch l.stream {
		case "stdout":
			s.app = append(s.app, l)
		case "stderr":
			var e event
			if json.Unmarshal([]byte(l.text), &e) == nil {
				e.at = l.at
				s.drainit = append(s.drainit, e)
			}
		}
	}
	id := `containerID="containerd://` + c.id + `"`
	for _, l := range readKlog(t, n.kubeletLog, id) {
		switch {
		case strings.Contains(l.text, `"Running preStop hook"`):
			s.preStopAt = l.at
		case strings.Contains(l.text, `"PreStop hook completed"`):
			s.preStopDone = l.at
		case strings.Contains(l.text, `"Killing container with a grace period"`):
			m := regexp.MustCompile(`gracePeriod=(\d+)`).FindStringSubmatch(l.text)
			if m == nil {
				t.Fatalf("kubelet: no gracePeriod in %q", l.text)
			}
			s.signalAt, s.grace = l.at, atoi(t, m[1])
		}
	}
	esc := `\"` + c.id + `\"`
	for _, l := range readLogrus(t, n.containerdLog, esc) {
		if m := regexp.MustCompile(`msg="Stop container ` + regexp.QuoteMeta(esc) + ` with signal (\w+)"`).FindStringSubmatch(l.text); m != nil {
			s.stopSignal = m[1]
		}
		if m := regexp.MustCompile(`msg="StopContainer for ` + regexp.QuoteMeta(esc) + ` with timeout (\d+) \(s\)"`).FindStringSubmatch(l.text); m != nil {
			s.stopAfter = atoi(t, m[1])
		}
		if strings.Contains(l.text, `msg="Kill container `+esc+`"`) {
			s.runtimeKill, s.killAt = true, l.at
		}
	}
	if s.signalAt.IsZero() || s.stopSignal == "" {
		t.Fatalf("no stop of container %.12s in the kubelet's (%v) or containerd's (%q) log", c.id, s.signalAt, s.stopSignal)
	}
	return s
}

// dump logs what a failed test needs: the manifest, each container's log, the platform's lines.
func (r *running) dump(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s\n%s\n", r.pod.name, r.spec)
	for name, c := range r.containers {
		fmt.Fprintf(&b, "--- container %s (%.12s), its log:\n", name, c.id)
		if c.log != nil {
			c.log.read()
			for _, l := range c.log.lines {
				fmt.Fprintf(&b, "%s %s %s\n", l.at.Format("15:04:05.000000"), l.stream, l.text)
			}
		}
		b.WriteString("--- kubelet:\n")
		for _, l := range readKlog(t, r.n.kubeletLog, c.id) {
			b.WriteString(l.text + "\n")
		}
		b.WriteString("--- containerd:\n")
		for _, l := range readLogrus(t, r.n.containerdLog, c.id) {
			if !strings.Contains(l.text, "spec: (*specs.Spec)") {
				b.WriteString(l.text + "\n")
			}
		}
	}
	t.Log(b.String())
}

// logLine is one line of a log, with its time.
type logLine struct {
	at     time.Time
	stream string // stdout or stderr, in the container's log
	text   string
}

// containerLog follows a container's log file in the CRI format the kubelet reads:
// "2026-11-23T08:53:55.995890845Z stdout F text" (F: a full line; P: part of a long one). Not
// integration/lines: that collects a process's pipes, or podman's "time text" lines; this
// format has a stream and partial lines, and is read from a file the kubelet deletes while the
// test still reads its open descriptor.
type containerLog struct {
	f       *os.File
	pending []byte
	partial map[string]string // a stream's text so far, while its line comes in P parts
	lines   []logLine
}

// read takes in whatever the runtime has written since the last call.
func (c *containerLog) read() {
	b, _ := io.ReadAll(c.f)
	c.pending = append(c.pending, b...)
	for {
		i := bytes.IndexByte(c.pending, '\n')
		if i < 0 {
			return
		}
		line := string(c.pending[:i])
		c.pending = c.pending[i+1:]
		f := strings.SplitN(line, " ", 4)
		if len(f) < 3 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			continue
		}
		text := ""
		if len(f) == 4 {
			text = f[3]
		}
		if c.partial == nil {
			c.partial = map[string]string{}
		}
		if f[2] == "P" {
			c.partial[f[1]] += text
			continue
		}
		text, c.partial[f[1]] = c.partial[f[1]]+text, ""
		c.lines = append(c.lines, logLine{at: at, stream: f[1], text: text})
	}
}

// await reads the log until a line matches, for up to timeout.
func (c *containerLog) await(t testing.TB, timeout time.Duration, what string, match func(logLine) bool) logLine {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c.read()
		for _, l := range c.lines {
			if match(l) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s in the container's log", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // polling a file that grows: there is nothing to wait on
	}
}

// readKlog returns the kubelet's log lines that contain substr, with their times. klog's header
// is "I1123 08:53:59.096381 …" in local time, without the year.
func readKlog(t *testing.T, path, substr string) []logLine {
	t.Helper()
	var out []logLine
	now := time.Now()
	eachLine(t, path, substr, func(text string) {
		if len(text) < 21 {
			return
		}
		at, err := time.ParseInLocation("0102 15:04:05.000000", text[1:21], time.Local)
		if err != nil {
			return
		}
		at = at.AddDate(now.Year(), 0, 0)
		if at.After(now.Add(time.Hour)) { // a run across New Year
			at = at.AddDate(-1, 0, 0)
		}
		out = append(out, logLine{at: at, text: text})
	})
	return out
}

// readLogrus returns containerd's log lines that contain substr: time="RFC 3339" level=… msg="…".
func readLogrus(t *testing.T, path, substr string) []logLine {
	t.Helper()
	var out []logLine
	eachLine(t, path, substr, func(text string) {
		ts, _, ok := strings.Cut(strings.TrimPrefix(text, `time="`), `"`)
		if !ok {
			return
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			return
		}
		out = append(out, logLine{at: at, text: text})
	})
	return out
}

func eachLine(t *testing.T, path, substr string, fn func(string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20) // containerd logs each container's whole spec
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			fn(sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// event is one of drainit's JSON log lines, the fields the tests look at.
type event struct {
	at        time.Time // when the runtime read it
	Time      time.Time `json:"time"` // drainit's own clock, to the millisecond
	Message   string    `json:"message"`
	Phase     string    `json:"phase"`
	Elapsed   *float64  `json:"elapsed"` // milliseconds since the trigger (t0)
	Signal    string    `json:"signal"`
	Status    *int      `json:"status"`
	Summary   string    `json:"summary"`
	UserAgent string    `json:"user_agent"`
	PID       int       `json:"pid"`  // a process drainit names (its own PID namespace's number)
	PGID      int       `json:"pgid"` // a process group a signal went to
	// The adaptive drain's end ("adaptive drain over").
	Reason    string `json:"reason"`
	NewConns  *int   `json:"new_connections"`
	Listeners int    `json:"listeners"`
	Method    string `json:"method"`
}

// find returns drainit's first event with the message; the test fails if there is none.
func (s stopped) find(t *testing.T, message string) event {
	t.Helper()
	for _, e := range s.drainit {
		if e.Message == message {
			return e
		}
	}
	t.Fatalf("drainit logged no %q event", message)
	return event{}
}

// has reports whether drainit logged an event with the message.
func (s stopped) has(message string) bool {
	for _, e := range s.drainit {
		if e.Message == message {
			return true
		}
	}
	return false
}

// appLine returns the app's first line that starts with prefix; the test fails if there is none.
func (s stopped) appLine(t *testing.T, prefix string) logLine {
	t.Helper()
	for _, l := range s.app {
		if strings.HasPrefix(l.text, prefix) {
			return l
		}
	}
	t.Fatalf("the app printed no line starting with %q", prefix)
	return logLine{}
}
