//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseMarker(t *testing.T) {
	m := marker{PID: 1, PIDNS: 4026532871, Start: 1753715}
	if got, err := parseMarker(m.String()); err != nil || got != m {
		t.Errorf("parseMarker(%q) = %+v, %v; want %+v", m.String(), got, err, m)
	}
	// Keys a later drainit may add are skipped, wherever they are.
	if got, err := parseMarker("  v=2 start=1753715 pidns=4026532871\tpid=1 host=web-1 "); err != nil || got != m {
		t.Errorf("with other keys: %+v, %v; want %+v", got, err, m)
	}
	for _, bad := range []string{
		"", " ", "1", "pid=1", "pid=1 pidns=4026532871", "pidns=4026532871 start=1753715",
		"pid=0 pidns=4026532871 start=1753715",       // no process's pid
		"pid=4194305 pidns=4026532871 start=1753715", // above PID_MAX_LIMIT
		"pid=-1 pidns=4026532871 start=1753715", "pid=+1 pidns=4026532871 start=1753715",
		"pid= pidns=4026532871 start=1753715", "pid=1x pidns=4026532871 start=1753715",
		"pid=1 pidns=pid:[4026532871] start=1753715", "pid=1 pidns=4026532871 start=99999999999999999999",
		"pid=1 pid=2 pidns=4026532871 start=1753715", // which one?
		"pid=1 pidns=4026532871 start=1753715 junk",  // not KEY=VALUE
		"pid=1,pidns=4026532871,start=1753715",
	} {
		if got, err := parseMarker(bad); err == nil {
			t.Errorf("parseMarker(%q) = %+v, want an error", bad, got)
		}
	}
	// The error goes to the log: a long value (a copy of something else) is not quoted whole.
	for _, long := range []string{strings.Repeat("a", 100000), "pid=" + strings.Repeat("9", 100000) + " pidns=1 start=1"} {
		if _, err := parseMarker(long); err == nil || len(err.Error()) > 200 {
			t.Errorf("parseMarker of %d bytes: error of %d bytes, want one of at most 200", len(long), len(err.Error()))
		}
	}
}

// FuzzParseMarker: whatever the variable holds (it can be set by hand, or copied), parseMarker does
// not panic, and a marker it accepts is written back as one that parses to the same.
func FuzzParseMarker(f *testing.F) {
	f.Add("pid=1 pidns=4026532871 start=1753715")
	f.Add("pid=1 pidns=4026532871 start=1753715 v=2")
	f.Add("pid=4194304 pidns=18446744073709551615 start=0")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := parseMarker(s)
		if err != nil {
			return
		}
		if m.PID <= 0 {
			t.Fatalf("parseMarker(%q) = %+v: no process's pid", s, m)
		}
		if again, err := parseMarker(m.String()); err != nil || again != m {
			t.Fatalf("parseMarker(%q) = %+v, written back %q, read again %+v, %v", s, m, m.String(), again, err)
		}
	})
}

// fakeProc is a /proc tree in a directory: for each process, PID/stat and the link PID/ns/pid.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) fakeProc { return fakeProc{t, t.TempDir()} }

// add writes process pid: its parent, start time and PID namespace inode, with a stat line as
// the kernel writes it (a command name with spaces and parentheses, which a process can set).
func (p fakeProc) add(pid, ppid int, start, ns uint64) {
	p.t.Helper()
	dir := filepath.Join(p.root, strconv.Itoa(pid))
	if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
		p.t.Fatal(err)
	}
	line := fmt.Sprintf("%d (a) S %d) S %d %d %d 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0 18446744073709551615\n",
		pid, pid, ppid, pid, pid, start)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Symlink(fmt.Sprintf("pid:[%d]", ns), filepath.Join(dir, "ns", "pid")); err != nil {
		p.t.Fatal(err)
	}
}

func TestOuterMarker(t *testing.T) {
	const ns, otherNS = 4026532871, 4026531836
	p := newFakeProc(t)
	// A container: drainit is PID 1 and runs sh, which runs drainit (9), not with exec; 8 is
	// drainit started by drainit itself; 20 is a sibling of sh, 30 a process much further down.
	p.add(1, 0, 500, ns)
	p.add(7, 1, 510, ns)
	p.add(9, 7, 520, ns)
	p.add(8, 1, 512, ns)
	p.add(20, 1, 530, ns)
	outer := marker{PID: 1, PIDNS: ns, Start: 500}
	for _, self := range []int{8, 9} {
		if got, err := outerMarker(p.root, outer.String(), self); got != 1 || err != nil {
			t.Errorf("pid %d below drainit: outerMarker = %d, %v; want 1", self, got, err)
		}
	}
	// A drainit one level down that is gone and whose pid went to sh: sh started later.
	if got, err := outerMarker(p.root, marker{PID: 7, PIDNS: ns, Start: 505}.String(), 9); got != 0 || !strings.Contains(fmt.Sprint(err), "started at tick 510, not 505") {
		t.Errorf("a reused pid: outerMarker = %d, %v; want 0 and the start times", got, err)
	}

	stale := map[string]struct {
		value string
		self  int
		why   string // in the error
	}{
		"another namespace": {marker{PID: 1, PIDNS: otherNS, Start: 500}.String(), 9, "another PID namespace"},
		"not an ancestor":   {marker{PID: 20, PIDNS: ns, Start: 530}.String(), 9, "pid 20 is not an ancestor"},
		"no such process":   {marker{PID: 55, PIDNS: ns, Start: 500}.String(), 9, "pid 55 is not an ancestor"},
		"itself":            {marker{PID: 9, PIDNS: ns, Start: 520}.String(), 9, "pid 9 is not an ancestor"},
		"malformed":         {"pid=1", 9, "malformed"},
		"self unreadable":   {outer.String(), 99, "no such file"},
	}
	for name, c := range stale {
		if got, err := outerMarker(p.root, c.value, c.self); got != 0 || err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s: outerMarker = %d, %v; want 0 and an error saying %q", name, got, err, c.why)
		}
	}
}

// A tree /proc cannot show whole, or that changes under the walk: the walk ends, refusing
// nothing.
func TestOuterMarkerBrokenTrees(t *testing.T) {
	const ns = 4026532871
	p := newFakeProc(t)
	// 40 and 41 are each other's parent (a pid reused while the parents are read one by one).
	p.add(40, 41, 600, ns)
	p.add(41, 40, 601, ns)
	if got, err := outerMarker(p.root, marker{PID: 1, PIDNS: ns, Start: 500}.String(), 40); got != 0 || !strings.Contains(fmt.Sprint(err), "first 64 ancestors") {
		t.Errorf("a cycle: outerMarker = %d, %v; want 0 after maxNestingDepth", got, err)
	}
	// A parent whose stat has gone (exited meanwhile, or hidden by hidepid).
	p.add(50, 51, 600, ns)
	if got, err := outerMarker(p.root, marker{PID: 1, PIDNS: ns, Start: 500}.String(), 50); got != 0 || err == nil {
		t.Errorf("a parent gone: outerMarker = %d, %v; want 0 and an error", got, err)
	}
	// A stat line that is not one, and a namespace link of another shape.
	p.add(60, 1, 600, ns)
	if err := os.WriteFile(filepath.Join(p.root, "60", "stat"), []byte("60 (x) S 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := outerMarker(p.root, marker{PID: 1, PIDNS: ns, Start: 500}.String(), 60); got != 0 || err == nil {
		t.Errorf("a cut stat line: outerMarker = %d, %v; want 0 and an error", got, err)
	}
	dir := filepath.Join(p.root, "70", "ns")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("net:[4026531840]", filepath.Join(dir, "pid")); err != nil {
		t.Fatal(err)
	}
	if got, err := outerMarker(p.root, marker{PID: 1, PIDNS: ns, Start: 500}.String(), 70); got != 0 || !strings.Contains(fmt.Sprint(err), "is not pid:[INODE]") {
		t.Errorf("a namespace link of another shape: outerMarker = %d, %v; want 0 and an error", got, err)
	}
}

// On the real /proc: the marker of this process names it to a child it starts, not to itself
// nor, once copied, to a process of another PID namespace (checked in the integration tests,
// which can make one).
func TestMarkerLive(t *testing.T) {
	self := os.Getpid()
	m, err := markerOf("/proc", self)
	if err != nil {
		t.Fatal(err)
	}
	if m.PID != self || m.PIDNS == 0 || m.Start == 0 {
		t.Fatalf("markerOf = %+v", m)
	}
	cmd := exec.Command("sh", "-c", "sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if got, err := outerMarker("/proc", m.String(), cmd.Process.Pid); got != self || err != nil {
		t.Errorf("a child: outerMarker = %d, %v; want this process, %d", got, err, self)
	}
	if got, err := outerMarker("/proc", m.String(), self); got != 0 || err == nil {
		t.Errorf("itself: outerMarker = %d, %v; want 0", got, err)
	}
	later := m
	later.Start++
	if got, err := outerMarker("/proc", later.String(), cmd.Process.Pid); got != 0 || err == nil {
		t.Errorf("another start time: outerMarker = %d, %v; want 0", got, err)
	}
}
