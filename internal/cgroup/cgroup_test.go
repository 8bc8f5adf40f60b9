package cgroup

import (
	"testing"

	"github.com/drainit/drainit/internal/testenv"
)

// What the container sees, as seen on the machines drainit runs on: v2 with a cgroup namespace
// (Kubernetes, Docker and podman on a v2 host), v2 without one (the host's hierarchy, read-only),
// and v1 (podman 4.3 here: /proc/self/cgroup gives the host's path, the mount is the
// container's own cgroup), and no cgroup files at all.
func TestPids(t *testing.T) {
	const v1Self = "8:pids:/libpod_parent/libpod-1\n4:memory:/libpod_parent/libpod-1\n0::/libpod_parent/libpod-1\n"
	for _, c := range []struct {
		name           string
		files          map[string]string
		current, limit int
		limited        bool
	}{
		{"v2 namespace", map[string]string{
			"proc/self/cgroup":           "0::/\n",
			"sys/fs/cgroup/pids.max":     "50\n",
			"sys/fs/cgroup/pids.current": "12\n",
		}, 12, 50, true},
		{"v2 host hierarchy", map[string]string{
			"proc/self/cgroup": "0::/system.slice/docker-1.scope\n",
			"sys/fs/cgroup/system.slice/docker-1.scope/pids.max":     "max\n",
			"sys/fs/cgroup/system.slice/docker-1.scope/pids.current": "3\n",
		}, 0, 0, false},
		{"v1 container mount", map[string]string{
			"proc/self/cgroup":                         v1Self,
			"sys/fs/cgroup/pids/pids.max":              "40\n",
			"sys/fs/cgroup/pids/pids.current":          "40\n",
			"sys/fs/cgroup/unified/cgroup.controllers": "",
		}, 40, 40, true},
		{"v1 host path", map[string]string{
			"proc/self/cgroup": v1Self,
			"sys/fs/cgroup/pids/libpod_parent/libpod-1/pids.max":     "7\n",
			"sys/fs/cgroup/pids/libpod_parent/libpod-1/pids.current": "5\n",
			"sys/fs/cgroup/pids/pids.current":                        "900\n", // the root's
		}, 5, 7, true},
		{"nothing", map[string]string{}, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := Self(testenv.WriteTree(t, c.files))
			if cur, lim, ok := g.Pids(); cur != c.current || lim != c.limit || ok != c.limited {
				t.Errorf("Pids() = %d, %d, %v; want %d, %d, %v", cur, lim, ok, c.current, c.limit, c.limited)
			}
		})
	}
}
