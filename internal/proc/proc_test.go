package proc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/drainit/drainit/integration/testenv"
)

func TestParentAndDescendantsLive(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if st, err := ReadStat("/proc", cmd.Process.Pid); err != nil || st.PPID != os.Getpid() {
		t.Fatalf("ReadStat's PPID = %d, %v; want %d", st.PPID, err, os.Getpid())
	}
	// The shell's child appears a moment after the start.
	for range 1000 {
		ds := Descendants("/proc", os.Getpid())
		if slices.Contains(ds, cmd.Process.Pid) && len(ds) >= 2 {
			return
		}
	}
	t.Fatalf("Descendants never listed the shell and its sleep: %v", Descendants("/proc", os.Getpid()))
}

// Tree reads the kernel's lists of children: every thread's, and the tree's own processes only.
func TestTreeLive(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for range 1000 {
		ds, ok := Tree("/proc", os.Getpid())
		if !ok {
			testenv.SkipUnlessCI(t, "this kernel keeps no lists of children (CONFIG_PROC_CHILDREN), which drainit's process-tree walk relies on")
		}
		if slices.Contains(ds, cmd.Process.Pid) && len(ds) >= 2 {
			return
		}
	}
	ds, _ := Tree("/proc", os.Getpid())
	t.Fatalf("Tree never listed the shell and its sleep: %v", ds)
}

// Tree follows every thread's list, walks a cycle (reused pids) once, and says when the kernel
// keeps no lists at all.
func TestTreeFromChildrenFiles(t *testing.T) {
	root := t.TempDir()
	// pid: each thread's children; 1's second thread forked 11, and 12 <-> 13 is a cycle.
	for pid, threads := range map[int]map[int]string{
		1:  {1: "10 ", 2: "11 12 "},
		10: {10: ""},
		11: {11: "14 "},
		12: {12: "13 "},
		13: {13: "12 "},
		14: {14: ""},
	} {
		for tid, kids := range threads {
			dir := filepath.Join(root, strconv.Itoa(pid), "task", strconv.Itoa(tid))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "children"), []byte(kids), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for pid, want := range map[int][]int{1: {10, 11, 12, 13, 14}, 12: {13}, 14: nil} {
		got, ok := Tree(root, pid)
		slices.Sort(got)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("Tree(%d) = %v, %v; want %v, true", pid, got, ok, want)
		}
	}
	if got, ok := Tree(t.TempDir(), 1); ok {
		t.Errorf("Tree with no children files = %v, true; want false", got)
	}
	// Below takes the lists where they are.
	if got, want := Below(root, 1), func() []int { w, _ := Tree(root, 1); return w }(); !slices.Equal(got, want) {
		t.Errorf("Below(1) = %v, want Tree's %v", got, want)
	}
}

func TestSocketInodes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	before, err := SocketInodes("/proc", os.Getpid())
	if err != nil || len(before) == 0 {
		t.Fatalf("SocketInodes = %v, %v; want the listener's inode", before, err)
	}
	if _, err := SocketInodes("/proc", 1<<30); err == nil {
		t.Error("no error for a pid that does not exist")
	}
}

func TestPassiveOpens(t *testing.T) {
	n, err := NewPassiveOpensReader("testdata/proc", 100).Read()
	if err != nil || n != 4242 {
		t.Fatalf("PassiveOpens = %d, %v; want 4242", n, err)
	}
	if _, err := NewPassiveOpensReader("/proc", os.Getpid()).Read(); err != nil {
		t.Fatalf("live /proc: %v", err)
	}
	if _, err := NewPassiveOpensReader("testdata", 1).Read(); err == nil {
		t.Error("no error for a missing file")
	}
}

// Parents read one after the other can form a cycle when pids are reused during the scan: the
// walk must still end, listing each process once.
func TestDescendantsSurvivesACycle(t *testing.T) {
	root := t.TempDir()
	for pid, ppid := range map[int]int{10: 1, 11: 10, 12: 13, 13: 12, 14: 11, 15: 15} {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (a) S %d 0 0 0 -1 4194304\n", pid, ppid) // as the kernel writes it, up to flags
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 11 -> 14 and, through the reused pids, 11 <- 10 <- 1 with 12 <-> 13 off to the side.
	for pid, want := range map[int][]int{1: {10, 11, 14}, 12: {13}, 15: nil} {
		got := Descendants(root, pid)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("Descendants(%d) = %v, want %v", pid, got, want)
		}
	}
}
