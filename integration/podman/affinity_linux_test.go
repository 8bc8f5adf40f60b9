package podman

import (
	"os"
	"strings"
	"testing"
)

// drainit as PID 1 of a runc container holds its own start on one CPU and gives the app the
// CPUs the container was given: all of them, or the one of `podman run --cpuset-cpus`, which
// runc sets (a cgroup cpuset) before it execs drainit. drainit's threads have them too.
func TestAppGetsTheContainersCPUs(t *testing.T) {
	h := need(t)
	t.Parallel()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatalf("the online CPUs: %v", err)
	}
	online := strings.TrimSpace(string(b))
	last := online[strings.LastIndexAny(online, ",-")+1:]
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
