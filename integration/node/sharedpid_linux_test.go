package node

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// TestSharedPIDNamespace: a pod with shareProcessNamespace: true, whose PID namespace's PID 1 is
// the sandbox's process. drainit runs the app as a child subreaper there, beside a native
// sidecar that runs testapp's tree itself (no drainit): its own group member, orphan and daemon,
// which drainit can see in /proc and, as root, signal. drainit stops the app's tree as it would
// in a PID namespace of its own, and nothing else: the sidecar's processes and the sandbox's are
// never signalled, and are still there when the app container has exited; the app's orphans
// (a setsid'd daemon too) are drainit's, the sidecar's the sandbox's. Two pods:
//
//   - kill: --forward group, an adaptive drain, an app tree that survives SIGTERM. A SIGTSTP to
//     drainit changes nothing (no shell above it resumes a stopped job); the sidecar's listener,
//     busy through the drain, does not hold it open; the stop signal reaches the app's group,
//     and drainit's SIGKILL at its kill point the app's whole tree.
//   - cleanup: --forward child, a fixed drain, an app that exits on SIGTERM and leaves the rest
//     of its tree running: drainit's cleanup (SIGTERM, then SIGKILL) ends them.
func TestSharedPIDNamespace(t *testing.T) {
	n := need(t)
	t.Parallel()
	for _, c := range []sharedPIDCase{
		// Short: the sidecar's 2 s after the app container's exit (its app holds SIGTERM) and
		// the kubelet's start of the pod are most of each run.
		{name: "kill", grace: 4, hold: "app,gc,orphan,daemon", env: map[string]string{
			"DRAINIT_GRACE_PERIOD": "4s", "DRAINIT_DRAIN": "adaptive", "DRAINIT_DRAIN_QUIET": "500ms", "DRAINIT_DRAIN_MAX": "1500ms",
		}},
		{name: "cleanup", grace: 2, hold: "gc,orphan,daemon", env: map[string]string{
			"DRAINIT_GRACE_PERIOD": "2s", "DRAINIT_DRAIN_DELAY": "200ms", "DRAINIT_KILL_MARGIN": "1s",
			"DRAINIT_FORWARD": "child", "DRAINIT_CLEANUP_WAIT": "300ms",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, n)
		})
	}
}

// sharedPIDCase is one pod of TestSharedPIDNamespace.
type sharedPIDCase struct {
	name  string
	grace int               // terminationGracePeriodSeconds, drainit's too
	hold  string            // the app's tree: who survives SIGTERM (testapp tree -hold)
	env   map[string]string // drainit's, beside the debug log
}

func (c sharedPIDCase) run(t *testing.T, n *node) {
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	appAddr, sideAddr := fmt.Sprintf("127.0.0.1:%d", ports[0]), fmt.Sprintf("127.0.0.1:%d", ports[1])
	env := map[string]string{"DRAINIT_LOG_LEVEL": "debug"} // "reaped orphan", each signal's target
	for k, v := range c.env {
		env[k] = v
	}
	adaptive := env["DRAINIT_DRAIN"] == "adaptive"
	r := n.start(t, pod{name: "sharedpid-" + c.name, image: imageTerm, grace: c.grace, sharePID: true, env: env,
		app: []string{"tree", "-addr", appAddr, "-hold", c.hold},
		// Its app survives the kubelet's SIGTERM, so that the sidecar runs on for the 2 s or more
		// the kubelet gives it after the app container has exited.
		sidecars: []container{{name: "side", app: []string{"tree", "-addr", sideAddr, "-hold", "app"}, noDrainit: true}}})
	appC, sideC := r.containers["app"], r.containers["side"]
	// The pod's PID namespace as its processes number it: the sidecar's /proc, which outlives
	// drainit. Every pid below is that namespace's.
	root := filepath.Join("/proc", strconv.Itoa(n.taskPid(t, sideC.id)), "root", "proc")
	app, side := readTree(t, appC.log), readTree(t, sideC.log)

	// The layout: the sandbox's process is PID 1, drainit a process among the others, below
	// the runtime (outside the namespace: parent 0) and leading its session (runc's setsid).
	if cmd, err := os.ReadFile(filepath.Join(root, "1", "cmdline")); err != nil || !strings.Contains(string(cmd), "876000h") {
		t.Fatalf("PID 1 of the pod's namespace runs %q (%v), want the sandbox's testapp sleep", cmd, err)
	}
	drainit := stat(t, root, app.pids["app"]).PPID
	if ds := stat(t, root, drainit); drainit == 1 || ds.PPID != 0 || ds.Session != drainit {
		t.Fatalf("drainit is pid %d, parent %d, session %d: want a pid other than 1, its parent outside the namespace (0), leading its session", drainit, ds.PPID, ds.Session)
	}
	for _, tr := range []struct {
		name   string
		tree   tree
		reaper int
	}{{"app", app, drainit}, {"sidecar", side, 1}} {
		for _, who := range []string{"orphan", "daemon"} {
			if st := stat(t, root, tr.tree.pids[who]); st.PPID != tr.reaper {
				t.Errorf("the %s's %s (pid %d) was adopted by pid %d, want %d", tr.name, who, tr.tree.pids[who], st.PPID, tr.reaper)
			}
		}
		if st := stat(t, root, tr.tree.pids["daemon"]); st.Session != tr.tree.pids["daemon"] {
			t.Errorf("the %s's daemon (pid %d) is in session %d, want its own", tr.name, tr.tree.pids["daemon"], st.Session)
		}
		if tr.tree.exitedParent != tr.reaper {
			t.Errorf("the %s's orphan that exited (pid %d) was adopted by pid %d, want %d", tr.name, tr.tree.exited, tr.tree.exitedParent, tr.reaper)
		}
	}
	// drainit reaps its orphan; the sidecar's is the sandbox's to reap (this one's never does).
	awaitCond(t, 5*time.Second, "drainit reaping the app's orphan", func() bool { return !testenv.ProcessExists(root, app.exited) })

	if c.name == "kill" {
		// A shell's job stops itself with its app on SIGTSTP, for the shell to resume it. Here
		// nothing would: drainit passes it on (to a group the kernel does not stop: orphaned),
		// and runs on.
		host := n.taskPid(t, appC.id)
		if err := syscall.Kill(host, syscall.SIGTSTP); err != nil {
			t.Fatal(err)
		}
		appC.log.await(t, 10*time.Second, "drainit passing SIGTSTP on", func(l logLine) bool {
			return l.stream == "stderr" && strings.Contains(l.text, `"signal":"SIGTSTP"`)
		})
		// A signal it forwards after that shows it running (one stopped leaves it pending).
		if err := syscall.Kill(host, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		appC.log.await(t, 10*time.Second, "the app's SIGUSR1, sent to drainit after its SIGTSTP", func(l logLine) bool {
			return l.text == "got app SIGUSR1"
		})
		if st := stat(t, root, drainit); st.Stopped() {
			t.Fatalf("drainit is stopped (state %c) after a SIGTSTP, with nothing above it to resume it", st.State)
		}
	}

	var traffic *dialer
	if adaptive {
		// New connections to the sidecar's listener, in the pod's (here the node's) network,
		// throughout the app's drain.
		traffic = dial(sideAddr, 50*time.Millisecond)
		defer traffic.stop()
	}
	r.remove(t)
	if _, ok := n.events.wait("/tasks/exit", appC.id, time.Duration(c.grace+30)*time.Second); !ok {
		t.Fatal("the app container did not exit")
	}
	// At once, while the sidecar still runs: the app's tree is gone, the sidecar's is not.
	for who, pid := range app.pids {
		if testenv.ProcessExists(root, pid) {
			t.Errorf("the app's %s (pid %d) is still there after drainit exited", who, pid)
		}
	}
	for who, pid := range side.pids {
		if st, err := proc.ReadStat(root, pid); err != nil || st.Gone() {
			t.Errorf("the sidecar's %s (pid %d) is gone (%v, state %c) when the app container has exited", who, pid, err, st.State)
		}
	}
	all := r.awaitStopped(t)
	s, sc := all["app"], all["side"]

	start := s.find(t, "stop sequence started")
	sent := s.find(t, "stop signal sent")
	if start.Signal != "SIGTERM" || sent.Signal != "SIGTERM" {
		t.Errorf("the stop sequence was started by %q and the app got %q, want SIGTERM both", start.Signal, sent.Signal)
	}
	got := gotSignals(s.app, start.Time.Add(-clockSlack))
	var exit int
	switch c.name {
	case "kill":
		// The stop signal to the app's group: the app, its member and its orphan, not the daemon.
		want := map[string][]string{"app": {"SIGTERM"}, "gc": {"SIGTERM"}, "orphan": {"SIGTERM"}}
		if !mapsEqual(got, want) {
			t.Errorf("after the trigger the app's tree got %v, want %v", got, want)
		}
		kill := s.find(t, "app still running: SIGKILL to everything")
		if at, killAt := elapsed(kill), time.Duration(c.grace)*time.Second-killMargin; at < killAt || at > killAt+time.Second {
			t.Errorf("drainit SIGKILLed the app %s after the trigger, want %s (grace − kill margin)", at, killAt)
		}
		exit = 128 + 9
		over := s.find(t, "adaptive drain over")
		conns := traffic.between(start.Time, over.Time)
		if over.Reason != "quiet" || over.NewConns == nil || *over.NewConns != 0 || over.Listeners != 1 {
			t.Errorf("the adaptive drain ended %q with %v new connections on %d listeners (%s), want quiet, 0, the app's 1, while the sidecar's took %d",
				over.Reason, over.NewConns, over.Listeners, over.Method, conns)
		}
		if conns < 5 {
			t.Errorf("the sidecar's listener took %d new connections during the drain, want at least 5 for the test to mean anything", conns)
		}
		t.Logf("adaptive drain: %s, %s after the trigger, method %s; the sidecar took %d new connections meanwhile", over.Reason, elapsed(over), over.Method, conns)
	case "cleanup":
		// --forward child: the stop signal to the app alone; the cleanup's SIGTERM to the rest
		// of its tree once it has exited, then SIGKILL after the cleanup wait.
		cleanup := s.find(t, "the app left processes behind: SIGTERM to them")
		want := map[string][]string{"app": {"SIGTERM"}, "gc": {"SIGTERM"}, "orphan": {"SIGTERM"}, "daemon": {"SIGTERM"}}
		if !mapsEqual(got, want) {
			t.Errorf("after the trigger the app's tree got %v, want %v", got, want)
		}
		for _, l := range s.app {
			if f := strings.Fields(l.text); len(f) == 3 && f[0] == "got" && f[1] != "app" && l.at.Before(cleanup.Time.Add(-clockSlack)) {
				t.Errorf("%q at %s, before drainit's cleanup (%s): --forward child signals the app alone", l.text, l.at.Format(time.StampMicro), cleanup.Time.Format(time.StampMilli))
			}
		}
		kill := s.find(t, "processes left behind by the app still run: SIGKILL")
		if d := elapsed(kill) - elapsed(cleanup); d < 300*time.Millisecond || d > 800*time.Millisecond {
			t.Errorf("drainit SIGKILLed the leftovers %s after its cleanup SIGTERM, want the 300ms cleanup wait", d)
		}
	}
	if s.exit.ExitStatus != exit {
		t.Errorf("the app container exited %d, want %d", s.exit.ExitStatus, exit)
	}
	if done := s.find(t, "drainit exiting"); done.Summary == "" {
		t.Error("drainit's last event has no summary")
	}
	if s.runtimeKill {
		t.Error("containerd had to SIGKILL the app container")
	}
	reaped := false
	for _, e := range s.drainit {
		if e.Message == "reaped orphan" {
			reaped = reaped || e.PID == app.exited
			if e.PID == side.exited || slices.Contains(valuesOf(side.pids), e.PID) || e.PID == 1 {
				t.Errorf("drainit reaped pid %d, the sidecar's or the sandbox's", e.PID)
			}
		}
	}
	if !reaped {
		t.Errorf("drainit did not log reaping the app's orphan (pid %d)", app.exited)
	}

	// The sidecar heard nothing but its own stop, the kubelet's SIGTERM to its first process.
	for _, l := range sc.app {
		if strings.HasPrefix(l.text, "got ") && (l.text != "got app SIGTERM" || l.at.Before(sc.signalAt)) {
			t.Errorf("the sidecar's %q at %s (its stop: %s)", l.text, l.at.Format(time.StampMicro), sc.signalAt.Format(time.StampMicro))
		}
	}

	// The kill case's adaptive drain, in a pod with no readiness probe, draws adaptive-drain-ready's
	// info: advice for a Service's last ready pod, not about the shared PID namespace.
	out, err := r.check(t)
	var other []string
	for _, f := range findings(out) {
		if !strings.HasSuffix(f, "(adaptive-drain-ready)") || !strings.Contains(f, ": info: ") {
			other = append(other, f)
		}
	}
	if err != nil || len(other) != 0 {
		t.Errorf("drainit check on the manifest: %v, want no finding but adaptive-drain-ready's info:\n%s", err, out)
	}
}

// tree is what testapp's tree mode reported: "ready WHO PID" for each of its processes, and
// "exited PID PARENT" for the orphan that exited.
type tree struct {
	pids                 map[string]int // app, gc, orphan, daemon
	exited, exitedParent int
}

func readTree(t *testing.T, log *containerLog) tree {
	t.Helper()
	log.read()
	tr := tree{pids: map[string]int{}}
	for _, l := range log.lines {
		f := strings.Fields(l.text)
		switch {
		case l.stream == "stdout" && len(f) == 3 && f[0] == "ready":
			tr.pids[f[1]] = atoi(t, f[2])
		case l.stream == "stdout" && len(f) == 3 && f[0] == "exited":
			tr.exited, tr.exitedParent = atoi(t, f[1]), atoi(t, f[2])
		}
	}
	if len(tr.pids) != 4 || tr.exited == 0 {
		t.Fatalf("testapp tree reported %v and exited orphan %d, want app, gc, orphan, daemon and one", tr.pids, tr.exited)
	}
	return tr
}

// gotSignals is who got which signal ("got WHO SIG" lines) from since on.
func gotSignals(lines []logLine, since time.Time) map[string][]string {
	out := map[string][]string{}
	for _, l := range lines {
		if f := strings.Fields(l.text); len(f) == 3 && f[0] == "got" && !l.at.Before(since) {
			out[f[1]] = append(out[f[1]], f[2])
		}
	}
	return out
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func valuesOf(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func stat(t *testing.T, root string, pid int) proc.Stat {
	t.Helper()
	st, err := proc.ReadStat(root, pid)
	if err != nil {
		t.Fatalf("pid %d of the pod's namespace: %v", pid, err)
	}
	return st
}

// awaitCond polls cond until it holds, for up to timeout.
func awaitCond(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
	}
}

// taskPid is the host's pid of a container's first process, from containerd's /tasks/start.
func (n *node) taskPid(t *testing.T, id string) int {
	t.Helper()
	ev, ok := n.events.wait("/tasks/start", id, 10*time.Second)
	if !ok || ev.Pid == 0 {
		t.Fatalf("no /tasks/start event with a pid for container %.12s", id)
	}
	return ev.Pid
}

// dialer opens a new connection to an address at a steady pace and closes it at once, and keeps
// the times it connected.
type dialer struct {
	mu   sync.Mutex
	at   []time.Time
	done chan struct{}
	wg   sync.WaitGroup
}

func dial(addr string, every time.Duration) *dialer {
	d := &dialer{done: make(chan struct{})}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				d.mu.Lock()
				d.at = append(d.at, time.Now())
				d.mu.Unlock()
			}
			select {
			case <-tick.C:
			case <-d.done:
				return
			}
		}
	}()
	return d
}

// between counts the connections made from a to b.
func (d *dialer) between(a, b time.Time) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, at := range d.at {
		if !at.Before(a) && !at.After(b) {
			n++
		}
	}
	return n
}

func (d *dialer) stop() {
	select {
	case <-d.done:
	default:
		close(d.done)
	}
	d.wg.Wait()
}
