package pod

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func requirePods(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and pods are unavailable: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

func TestStartIsPID1(t *testing.T) {
	requirePods(t)
	var out bytes.Buffer
	p, err := Start([]string{"sh", "-c", "echo $$; exit 7"}, Options{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	status, ok := p.Wait(10 * time.Second)
	if !ok || status != 7 {
		t.Fatalf("status %d, %v; want 7", status, ok)
	}
	if strings.TrimSpace(out.String()) != "1" {
		t.Fatalf("the command saw itself as pid %q, want 1", out.String())
	}
}

func TestSignalledStatus(t *testing.T) {
	requirePods(t)
	p, err := Start([]string{"sh", "-c", "sleep 60 & sleep 60"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if n := len(p.Processes()); n < 1 {
		t.Fatalf("%d processes seen in the namespace", n)
	}
	// SIGKILL from the parent namespace always reaches PID 1; the namespace dies with it.
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	status, ok := p.Wait(10 * time.Second)
	if !ok || status != 137 {
		t.Fatalf("status %d, %v; want 137", status, ok)
	}
}
