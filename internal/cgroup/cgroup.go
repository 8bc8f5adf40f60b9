// Package cgroup reads what drainit needs of its own control group, as a container sees it: the
// pids controller's count and limit (how many more processes and threads the container may
// have), and the memory controller's count of OOM kills.
//
// Where the files are: cgroup v2 has one hierarchy, in which /proc/self/cgroup gives drainit's
// path as "0::PATH"; v1 has one per controller ("8:pids:PATH"). A container runtime mounts the
// container's own cgroup at /sys/fs/cgroup (v2, with a cgroup namespace: PATH is then "/") or at
// /sys/fs/cgroup/CONTROLLER (v1, where PATH is still the host's: podman and Docker on a v1 host),
// so each file is looked for at PATH below the mount, then at the mount itself. A limit set
// above the container's cgroup (a Kubernetes pod's pids limit, on the pod's cgroup) is not
// visible from inside it, and not seen here.
package cgroup

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Group is drainit's cgroup, as /proc/self/cgroup names it.
type Group struct {
	root string            // "/" but for tests
	path map[string]string // by v1 controller name; "" is the v2 hierarchy's
}

// Self reads which cgroup this process is in from ROOT/proc/self/cgroup (root is "/" but for
// tests). A missing or unreadable file gives a Group that looks only at the mounts' roots.
func Self(root string) Group {
	g := Group{root: root, path: map[string]string{}}
	b, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return g
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		for c := range strings.SplitSeq(ctrls, ",") {
			g.path[c] = path
		}
	}
	return g
}

// read returns the first of a controller's file that can be read: at drainit's path below the
// hierarchy's mount, then at the mount itself; v2 first, then v1 (controller "pids", "memory").
// name2 and name1 are the file's names in v2 and v1.
func (g Group) read(controller, name2, name1 string) ([]byte, error) {
	v2 := filepath.Join(g.root, "sys", "fs", "cgroup")
	v1 := filepath.Join(v2, controller)
	var candidates []string
	if name2 != "" {
		if p, ok := g.path[""]; ok {
			candidates = append(candidates, filepath.Join(v2, p, name2))
		}
		candidates = append(candidates, filepath.Join(v2, name2))
	}
	if name1 != "" {
		if p, ok := g.path[controller]; ok {
			candidates = append(candidates, filepath.Join(v1, p, name1))
		}
		candidates = append(candidates, filepath.Join(v1, name1))
	}
	err := errors.New("no " + controller + " controller file found")
	for _, c := range candidates {
		var b []byte
		if b, err = os.ReadFile(c); err == nil {
			return b, nil
		}
	}
	return nil, err
}

// Pids returns how many tasks (processes and threads) drainit's cgroup holds and its limit;
// limited is false when there is none, or none can be read.
func (g Group) Pids() (current, limit int, limited bool) {
	b, err := g.read("pids", "pids.max", "pids.max")
	if err != nil {
		return 0, 0, false
	}
	if limit, err = strconv.Atoi(string(bytes.TrimSpace(b))); err != nil {
		return 0, 0, false // "max"
	}
	if b, err = g.read("pids", "pids.current", "pids.current"); err != nil {
		return 0, 0, false
	}
	if current, err = strconv.Atoi(string(bytes.TrimSpace(b))); err != nil {
		return 0, 0, false
	}
	return current, limit, true
}

// OOMKills returns how many processes the kernel's OOM killer has killed in drainit's cgroup
// (and the cgroups below it) since the cgroup was made: the "oom_kill" count of memory.events
// (v2) or memory.oom_control (v1, Linux 4.13+). ok is false when it cannot be read.
func (g Group) OOMKills() (n uint64, ok bool) {
	b, err := g.read("memory", "memory.events", "memory.oom_control")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "oom_kill "); found {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// OOMWatch counts the OOM killer's kills in drainit's cgroup from a baseline. It reads nothing
// until it is used: the cgroup's files are read off drainit's start.
type OOMWatch struct {
	root  string
	once  sync.Once
	group Group
	base  atomic.Uint64
}

// NewOOMWatch watches the cgroup that ROOT/proc/self/cgroup names (root is "/" but for tests).
func NewOOMWatch(root string) *OOMWatch { return &OOMWatch{root: root} }

func (w *OOMWatch) kills() (uint64, bool) {
	w.once.Do(func() { w.group = Self(w.root) })
	return w.group.OOMKills()
}

// Mark takes the count as it is now as the baseline. Before it, the baseline is 0: a container's
// cgroup is made with the container.
func (w *OOMWatch) Mark() {
	if n, ok := w.kills(); ok {
		w.base.Store(n)
	}
}

// Since returns how many kills the count has gained since Mark; ok is false when the count
// cannot be read.
func (w *OOMWatch) Since() (n uint64, ok bool) {
	n, ok = w.kills()
	if !ok {
		return 0, false
	}
	return n - min(n, w.base.Load()), true
}
