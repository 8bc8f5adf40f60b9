package proc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

// What the container sees, as seen on the machines drainit runs on: v2 with a cgroup namespace
// (Kubernetes, Docker and podman on a v2 host), v2 without one (the host's hierarchy, read-only),
// and v1 (podman 4.3 here: /proc/self/cgroup gives the host's path, the mount is the
// container's own cgroup), and no cgroup files at all.
func TestPidsAndOOMKills(t *testing.T) {
	const v1Self = "8:pids:/libpod_parent/libpod-1\n4:memory:/libpod_parent/libpod-1\n0::/libpod_parent/libpod-1\n"
	for _, c := range []struct {
		name           string
		files          map[string]string
		current, limit int
		limited        bool
		oomKills       uint64
		oomKnown       bool
	}{
		{"v2 namespace", map[string]string{
			"proc/self/cgroup":            "0::/\n",
			"sys/fs/cgroup/pids.max":      "50\n",
			"sys/fs/cgroup/pids.current":  "12\n",
			"sys/fs/cgroup/memory.events": "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n",
		}, 12, 50, true, 1, true},
		{"v2 host hierarchy", map[string]string{
			"proc/self/cgroup": "0::/system.slice/docker-1.scope\n",
			"sys/fs/cgroup/system.slice/docker-1.scope/pids.max":      "max\n",
			"sys/fs/cgroup/system.slice/docker-1.scope/pids.current":  "3\n",
			"sys/fs/cgroup/system.slice/docker-1.scope/memory.events": "oom_kill 0\n",
		}, 0, 0, false, 0, true},
		{"v1 container mount", map[string]string{
			"proc/self/cgroup":                         v1Self,
			"sys/fs/cgroup/pids/pids.max":              "40\n",
			"sys/fs/cgroup/pids/pids.current":          "40\n",
			"sys/fs/cgroup/memory/memory.oom_control":  "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
			"sys/fs/cgroup/unified/cgroup.controllers": "",
		}, 40, 40, true, 2, true},
		{"v1 host path", map[string]string{
			"proc/self/cgroup": v1Self,
			"sys/fs/cgroup/pids/libpod_parent/libpod-1/pids.max":     "7\n",
			"sys/fs/cgroup/pids/libpod_parent/libpod-1/pids.current": "5\n",
			"sys/fs/cgroup/pids/pids.current":                        "900\n", // the root's
		}, 5, 7, true, 0, false},
		{"nothing", map[string]string{}, 0, 0, false, 0, false},
		{"v1 before Linux 4.13", map[string]string{
			"proc/self/cgroup":                        v1Self,
			"sys/fs/cgroup/memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\n",
		}, 0, 0, false, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := OwnCgroup(testenv.WriteTree(t, c.files))
			if cur, lim, ok := g.Pids(); cur != c.current || lim != c.limit || ok != c.limited {
				t.Errorf("Pids() = %d, %d, %v; want %d, %d, %v", cur, lim, ok, c.current, c.limit, c.limited)
			}
			if n, ok := g.OOMKills(); n != c.oomKills || ok != c.oomKnown {
				t.Errorf("OOMKills() = %d, %v; want %d, %v", n, ok, c.oomKills, c.oomKnown)
			}
		})
	}
}

// OOMWatch counts from its Mark, from 0 before it (a container's cgroup is new), and not at all
// where the count cannot be read.
func TestOOMWatch(t *testing.T) {
	root := testenv.WriteTree(t, map[string]string{
		"proc/self/cgroup":            "0::/\n",
		"sys/fs/cgroup/memory.events": "oom 1\noom_kill 1\n",
	})
	w := NewOOMWatch(root)
	if n, ok := w.Since(); n != 1 || !ok {
		t.Errorf("before Mark: Since() = %d, %v; want the cgroup's 1", n, ok)
	}
	w.Mark()
	if n, ok := w.Since(); n != 0 || !ok {
		t.Errorf("right after Mark: Since() = %d, %v; want 0", n, ok)
	}
	if err := os.WriteFile(filepath.Join(root, "sys/fs/cgroup/memory.events"), []byte("oom 4\noom_kill 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, ok := w.Since(); n != 2 || !ok {
		t.Errorf("two kills after Mark: Since() = %d, %v; want 2", n, ok)
	}
	if n, ok := NewOOMWatch(t.TempDir()).Since(); n != 0 || ok {
		t.Errorf("no cgroup files: Since() = %d, %v; want 0, false", n, ok)
	}
}

// /proc/self/cgroup's lines, well-formed or not: the path of each controller drainit reads is
// the one its line gives, a line without two colons names nothing, and nothing panics.
func FuzzParseCgroup(f *testing.F) {
	for _, s := range []string{
		"0::/\n",
		"0::/system.slice/docker-1.scope\n",
		"9:name=systemd:/\n8:pids:/\n4:memory:/process_api/cc0d\n1:cpu,cpuacct:/\n0::/\n",
		"8:pids:/libpod_parent/libpod-1\n4:memory:/libpod_parent/libpod-1\n0::/libpod_parent/libpod-1\n",
		"3:memory,pids:/kubepods/pod1/c1",
		"::\n:\n\n0::",
		"0::/a:b\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		g := parseCgroup("/", text)
		var v2, pids, memory string
		for _, line := range strings.Split(text, "\n") {
			_, rest, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			ctrls, path, ok := strings.Cut(rest, ":")
			if !ok {
				continue
			}
			if ctrls == "" {
				v2 = path
				continue
			}
			for _, c := range strings.Split(ctrls, ",") {
				switch c {
				case "pids":
					pids = path
				case "memory":
					memory = path
				}
			}
		}
		if g.v2 != v2 || g.pids != pids || g.memory != memory {
			t.Errorf("parseCgroup(%q) = %+v; want v2 %q, pids %q, memory %q", text, g, v2, pids, memory)
		}
	})
}
