package proc

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"testing"
)

func TestParentAndDescendantsLive(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if ppid, ok := Parent("/proc", cmd.Process.Pid); !ok || ppid != os.Getpid() {
		t.Fatalf("Parent = %d, %v; want %d", ppid, ok, os.Getpid())
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
	n, err := PassiveOpens("testdata/proc", 100)
	if err != nil || n != 4242 {
		t.Fatalf("PassiveOpens = %d, %v; want 4242", n, err)
	}
	if _, err := PassiveOpens("/proc", os.Getpid()); err != nil {
		t.Fatalf("live /proc: %v", err)
	}
	if _, err := PassiveOpens("testdata", 1); err == nil {
		t.Error("no error for a missing file")
	}
}
