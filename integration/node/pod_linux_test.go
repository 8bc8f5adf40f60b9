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

// pod is one test's static pod: a single container, "app", running drainit (the image's
// ENTRYPOINT) in front of testapp, configured with DRAINIT_* variables as Dockerfile.example does.
type pod struct {
	name    string
	image   string
	grace   int               // terminationGracePeriodSeconds
	env     map[string]string // DRAINIT_* (DRAINIT_HTTP_ADDR is added: each pod gets a free port)
	app     []string          // testapp's arguments
	preStop string            // "", "httpGet" (/prestop) or "exec" (drainit prestop)
}

// manifest is the pod as the kubelet reads it from its static-pod directory (JSON is YAML).
func (p pod) manifest(controlAddr string, controlPort int) []byte {
	type kv struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	env := []kv{{"DRAINIT_HTTP_ADDR", controlAddr}}
	for k, v := range p.env {
		env = append(env, kv{k, v})
	}
	container := map[string]any{
		"name":            "app",
		"image":           p.image,
		"imagePullPolicy": "Never",
		"args":            append([]string{"--", "/testapp"}, p.app...),
		"env":             env,
	}
	switch p.preStop {
	case "httpGet":
		container["lifecycle"] = map[string]any{"preStop": map[string]any{"httpGet": map[string]any{
			"host": "127.0.0.1", "port": controlPort, "path": "/prestop"}}}
	case "exec":
		container["lifecycle"] = map[string]any{"preStop": map[string]any{"exec": map[string]any{
			"command": []string{"/drainit", "prestop"}}}}
	}
	b, err := json.MarshalIndent(map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": p.name, "namespace": "default"},
		"spec": map[string]any{
			// No CNI on the test node; the control server listens on a free loopback port.
			"hostNetwork":                   true,
			"terminationGracePeriodSeconds": p.grace,
			"containers":                    []any{container},
		},
	}, "", "  ")
	if err != nil {
		panic(err) // only maps, strings and ints: cannot fail
	}
	return b
}

// running is a pod the kubelet has started, with its container's log followed from the start.
type running struct {
	n           *node
	pod         pod
	manifest    string // the path in the kubelet's static-pod directory
	spec        []byte // what was written there
	containerID string
	log         *containerLog
	removedAt   time.Time
}

// start puts the pod's manifest into the kubelet's static-pod directory and waits until the
// container runs, its log is open, and the app (and for a preStop, drainit's control server) is
// ready. The pod is removed when the test ends, if the test has not removed it.
func (n *node) start(t *testing.T, p pod) *running {
	t.Helper()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	r := &running{n: n, pod: p, manifest: filepath.Join(n.dir, "manifests", p.name+".json")}
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
	logPath := filepath.Join(n.dir, "pod-logs", fmt.Sprintf("default_%s-%s_%s", p.name, nodeName, uid), "app", "0.log")
	// Opened now and read from the start: the kubelet deletes the directory when the pod goes,
	// and the open file stays readable.
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatalf("opening the container's log: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	r.log = &containerLog{f: f}
	r.log.await(t, 30*time.Second, "the app ready", func(l logLine) bool {
		return l.stream == "stdout" && strings.HasPrefix(l.text, "ready app ")
	})
	if p.preStop != "" {
		r.log.await(t, 30*time.Second, "drainit's control server", func(l logLine) bool {
			return strings.Contains(l.text, `"control server listening"`)
		})
	}
	return r
}

// waitRunning asks the kubelet's read-only API until the pod's container runs, and returns the
// pod's UID.
func (r *running) waitRunning(t *testing.T, timeout time.Duration) string {
	t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/pods", r.n.readOnlyPort)
	want := r.pod.name + "-" + nodeName
	deadline := time.Now().Add(timeout)
	for {
		var list struct {
			Items []struct {
				Metadata struct{ Name, UID string }
				Status   struct {
					ContainerStatuses []struct {
						Name        string
						ContainerID string
						State       struct{ Running *struct{} }
					}
				}
			}
		}
		if res, err := http.Get(url); err == nil {
			_ = json.NewDecoder(res.Body).Decode(&list) // an answer that does not decode: ask again
			res.Body.Close()
			for _, item := range list.Items {
				if item.Metadata.Name != want {
					continue
				}
				for _, cs := range item.Status.ContainerStatuses {
					if cs.Name == "app" && cs.State.Running != nil && strings.HasPrefix(cs.ContainerID, "containerd://") {
						r.containerID = strings.TrimPrefix(cs.ContainerID, "containerd://")
						return item.Metadata.UID
					}
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

// stopped is what the platform and the pod recorded about one stop.
type stopped struct {
	exit    taskEvent // containerd's /tasks/exit of the container
	app     []logLine // the app's stdout
	drainit []event   // drainit's JSON log lines (stderr)

	preStopAt   time.Time // the kubelet's "Running preStop hook"; zero without a hook
	signalAt    time.Time // the kubelet's "Killing container with a grace period" (after the hook)
	grace       int       // … its gracePeriod: what the kubelet gives the runtime after the hook
	stopSignal  string    // containerd's "Stop container … with signal X": the signal it sent
	stopAfter   int       // containerd's "StopContainer … with timeout N (s)"
	runtimeKill bool      // containerd's "Kill container …": it SIGKILLed after the timeout
}

// stop removes the pod and waits for its container to exit and its log to be complete.
func (r *running) stop(t *testing.T) stopped {
	t.Helper()
	r.remove(t)
	timeout := time.Duration(r.pod.grace)*time.Second + 30*time.Second
	exit, ok := r.n.events.wait("/tasks/exit", r.containerID, timeout)
	if !ok {
		t.Fatalf("container %.12s did not exit within %s of the pod's removal", r.containerID, timeout)
	}
	// containerd deletes the task once the shim has copied the last of its output to the log.
	if _, ok := r.n.events.wait("/tasks/delete", r.containerID, 30*time.Second); !ok {
		t.Fatalf("containerd did not delete the task of container %.12s within 30s of its exit", r.containerID)
	}
	s := stopped{exit: exit}
	r.log.read()
	for _, l := range r.log.lines {
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
	id := `containerID="containerd://` + r.containerID + `"`
	for _, l := range readKlog(t, r.n.kubeletLog, id) {
		switch {
		case strings.Contains(l.text, `"Running preStop hook"`):
			s.preStopAt = l.at
		case strings.Contains(l.text, `"Killing container with a grace period"`):
			m := regexp.MustCompile(`gracePeriod=(\d+)`).FindStringSubmatch(l.text)
			if m == nil {
				t.Fatalf("kubelet: no gracePeriod in %q", l.text)
			}
			s.signalAt, s.grace = l.at, atoi(t, m[1])
		}
	}
	esc := `\"` + r.containerID + `\"`
	for _, l := range readLogrus(t, r.n.containerdLog, esc) {
		if m := regexp.MustCompile(`msg="Stop container ` + regexp.QuoteMeta(esc) + ` with signal (\w+)"`).FindStringSubmatch(l.text); m != nil {
			s.stopSignal = m[1]
		}
		if m := regexp.MustCompile(`msg="StopContainer for ` + regexp.QuoteMeta(esc) + ` with timeout (\d+) \(s\)"`).FindStringSubmatch(l.text); m != nil {
			s.stopAfter = atoi(t, m[1])
		}
		if strings.Contains(l.text, `msg="Kill container `+esc+`"`) {
			s.runtimeKill = true
		}
	}
	if s.signalAt.IsZero() || s.stopSignal == "" {
		t.Fatalf("no stop of container %.12s in the kubelet's (%v) or containerd's (%q) log", r.containerID, s.signalAt, s.stopSignal)
	}
	return s
}

// dump logs what a failed test needs: the manifest, the container's log, the platform's lines.
func (r *running) dump(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "pod %s, container %.12s\n%s\n--- container log:\n", r.pod.name, r.containerID, r.spec)
	if r.log != nil {
		r.log.read()
		for _, l := range r.log.lines {
			fmt.Fprintf(&b, "%s %s %s\n", l.at.Format("15:04:05.000000"), l.stream, l.text)
		}
	}
	if r.containerID != "" {
		b.WriteString("--- kubelet:\n")
		for _, l := range readKlog(t, r.n.kubeletLog, r.containerID) {
			b.WriteString(l.text + "\n")
		}
		b.WriteString("--- containerd:\n")
		for _, l := range readLogrus(t, r.n.containerdLog, r.containerID) {
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
func (c *containerLog) await(t *testing.T, timeout time.Duration, what string, match func(logLine) bool) logLine {
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
