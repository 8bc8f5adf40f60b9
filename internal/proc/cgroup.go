package proc

import (
	"bytes"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// What drainit needs of its own control group, as a container sees it: the pids controller's
// count and limit (how many more processes and threads the container may have), and the memory
// controller's count of OOM kills.
//
// Where the files are: cgroup v2 has one hierarchy, in which /proc/self/cgroup gives drainit's
// path as "0::PATH"; v1 has one per controller ("8:pids:PATH"). A container runtime mounts the
// container's own cgroup at /sys/fs/cgroup (v2, with a cgroup namespace: PATH is then "/") or at
// /sys/fs/cgroup/CONTROLLER (v1, where PATH is still the host's: podman and Docker on a v1 host),
// so each file is looked for at PATH below the mount, then at the mount itself. A limit set
// above the container's cgroup (a Kubernetes pod's pids limit, on the pod's cgroup) is not
// visible from inside it, and not seen here.

// Cgroup is drainit's cgroup, as /proc/self/cgroup names it. Reading it allocates little: each
// allocation of a size class drainit's start had not used grew its idle memory for good
// (bench/STARTUP.md, "Idle memory, third pass").
type Cgroup struct {
	root string // "/" but for tests
	// The paths /proc/self/cgroup gives ("" where it gives none): v2's ("0::PATH"), v1's pids
	// and memory controllers'. An empty path reads the files at the mount, as none does.
	v2, pids, memory string
}

// cgroupFileMax bounds what is read of a cgroup file drainit parses (pids.max, memory.events):
// a few lines each.
const cgroupFileMax = 4 << 10

// OwnCgroup reads which cgroup this process is in from ROOT/proc/self/cgroup (root is "/" but for
// tests). A missing or unreadable file gives a Cgroup that looks only at the mounts' roots.
func OwnCgroup(root string) Cgroup {
	b, err := ReadSmall(filepath.Join(root, "proc/self/cgroup"), make([]byte, 0, 512), 64<<10)
	if err != nil {
		return Cgroup{root: root}
	}
	return parseCgroup(root, string(b)) // one copy: the paths are its substrings
}

// parseCgroup reads /proc/self/cgroup's text: "ID:CONTROLLERS:PATH" lines, CONTROLLERS empty for
// v2's and comma-separated for v1's.
func parseCgroup(root, text string) Cgroup {
	g := Cgroup{root: root}
	for line := range strings.Lines(text) {
		_, rest, ok := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		if !ok {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		if ctrls == "" {
			g.v2 = path
			continue
		}
		for c := range strings.SplitSeq(ctrls, ",") {
			switch c {
			case "pids":
				g.pids = path
			case "memory":
				g.memory = path
			}
		}
	}
	return g
}

// read returns the first of a controller's file that can be read: at drainit's path below the
// hierarchy's mount, then at the mount itself; v2 first, then v1 (controller "pids", "memory").
// name2 and name1 are the file's names in v2 and v1.
func (g Cgroup) read(controller, name2, name1 string, buf []byte) ([]byte, error) {
	v2 := filepath.Join(g.root, "sys/fs/cgroup")
	v1 := filepath.Join(v2, controller)
	v1path := g.pids
	if controller == "memory" {
		v1path = g.memory
	}
	// in reads name at drainit's path below mount (where /proc/self/cgroup gave one), then at
	// mount itself.
	in := func(mount, path, name string) ([]byte, bool) {
		if path != "" {
			if b, err := ReadSmall(filepath.Join(mount, path, name), buf, cgroupFileMax); err == nil {
				return b, true
			}
		}
		b, err := ReadSmall(filepath.Join(mount, name), buf, cgroupFileMax)
		return b, err == nil
	}
	if b, ok := in(v2, g.v2, name2); ok {
		return b, nil
	}
	if b, ok := in(v1, v1path, name1); ok {
		return b, nil
	}
	return nil, errors.New("no " + controller + " controller file found")
}

// Pids returns how many tasks (processes and threads) drainit's cgroup holds and its limit;
// limited is false when there is none, or none can be read.
func (g Cgroup) Pids() (current, limit int, limited bool) {
	buf := make([]byte, 0, 64)
	b, err := g.read("pids", "pids.max", "pids.max", buf)
	if err != nil {
		return 0, 0, false
	}
	if limit, err = strconv.Atoi(string(bytes.TrimSpace(b))); err != nil {
		return 0, 0, false // "max"
	}
	if b, err = g.read("pids", "pids.current", "pids.current", buf); err != nil {
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
func (g Cgroup) OOMKills() (n uint64, ok bool) {
	b, err := g.read("memory", "memory.events", "memory.oom_control", make([]byte, 0, 256))
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		if v, found := bytes.CutPrefix(line, []byte("oom_kill ")); found {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
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
	group Cgroup
	base  atomic.Uint64
}

// NewOOMWatch watches the cgroup that ROOT/proc/self/cgroup names (root is "/" but for tests).
func NewOOMWatch(root string) *OOMWatch { return &OOMWatch{root: root} }

// Cgroup is the cgroup watched, read from /proc/self/cgroup on the first use of w; others that
// need drainit's cgroup take it from here rather than read it again.
func (w *OOMWatch) Cgroup() Cgroup {
	w.once.Do(func() { w.group = OwnCgroup(w.root) })
	return w.group
}

// Mark takes the count as it is now as the baseline. Before it, the baseline is 0: a container's
// cgroup is made with the container.
func (w *OOMWatch) Mark() {
	if n, ok := w.Cgroup().OOMKills(); ok {
		w.base.Store(n)
	}
}

// Since returns how many kills the count has gained since Mark; ok is false when the count
// cannot be read.
func (w *OOMWatch) Since() (n uint64, ok bool) {
	n, ok = w.Cgroup().OOMKills()
	if !ok {
		return 0, false
	}
	return n - min(n, w.base.Load()), true
}
