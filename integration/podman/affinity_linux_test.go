package podman

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// drainit as PID 1 of a runc container holds its own start on one CPU and gives the app the
// CPUs the container was given: all of them, or the one of `podman run --cpuset-cpus`, which
// runc sets (a cgroup cpuset) before it execs drainit. drainit's threads have them too.
func TestAppGetsTheContainersCPUs(t *testing.T) {
	h := need(t)
	t.Parallel()
	online, _, last := onlineCPUs(t)
	for _, c := range []struct {
		opts []string
		want string
	}{
		{nil, online},
		{[]string{"--cpuset-cpus=" + last}, last},
	} {
		id := h.start(t, c.opts, "--", "/testapp", "affinity")
		if code, _ := h.exited(t, id); code != 0 {
			t.Fatalf("podman run %v: container exit code %d, want 0", c.opts, code)
		}
		want := "affinity app=" + c.want + " parent=" + c.want // the parent is drainit, PID 1
		var got []string
		for _, l := range h.logs(t, id).app {
			got = append(got, l.Text)
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("podman run %v: the app printed %q, want %q", c.opts, got, want)
		}
	}
}

// A cpuset that grows once the container runs (`podman update --cpuset-cpus`; a kubelet's CPU
// manager growing its shared pool as exclusive CPUs come free) reaches the app and drainit, as
// it reaches a process with no init in front of it. From Linux 6.2 the kernel keeps the mask a
// sched_setaffinity asked for, which a child inherits, and narrows every later cpuset to it: an
// app that inherited the CPUs of the start as a request would stay on them.
func TestAppFollowsAGrowingCpuset(t *testing.T) {
	h := need(t)
	t.Parallel()
	online, first, last := onlineCPUs(t)
	if first == last {
		testenv.SkipUnlessCI(t, "one CPU online: no cpuset to grow")
	}
	id := h.start(t, []string{"--cpuset-cpus=" + first}, "--", "/testapp", "sleep", "1h")
	drainit := h.hostPid(t, id)
	app := onlyChild(t, drainit)
	if got := allowed(t, app, app); got != first {
		t.Fatalf("with --cpuset-cpus=%s the app has CPUs %s", first, got)
	}
	h.must(t, "update", "--cpuset-cpus="+online, id)
	// The cgroup's write updates its tasks before it returns.
	if got := allowed(t, app, app); got != online {
		t.Errorf("the container's cpuset grew from %s to %s, the app has CPUs %s", first, online, got)
	}
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(drainit), "task"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if got := allowed(t, drainit, tid); got != online {
			t.Errorf("the container's cpuset grew from %s to %s, drainit's thread %d has CPUs %s", first, online, tid, got)
		}
	}
}

// onlineCPUs is the host's online CPUs as a list ("0-1"), and the first and the last of them.
func onlineCPUs(t *testing.T) (online, first, last string) {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatalf("the online CPUs: %v", err)
	}
	online = strings.TrimSpace(string(b))
	first = online[:strings.IndexFunc(online+",", func(r rune) bool { return r == ',' || r == '-' })]
	last = online[strings.LastIndexAny(online, ",-")+1:]
	return online, first, last
}

// onlyChild waits for process pid's one child (drainit's app) and returns its pid.
func onlyChild(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if children := proc.Children("/proc", pid); len(children) == 1 {
			return children[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("process %d has children %v after 10s, want one", pid, children)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allowed is thread tid of process pid's Cpus_allowed_list.
func allowed(t *testing.T, pid, tid int) string {
	t.Helper()
	v, err := proc.StatusFileField(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid), "Cpus_allowed_list")
	if err != nil {
		t.Fatalf("thread %d of process %d: %v", tid, pid, err)
	}
	return v
}
