//go:build linux

package main

import (
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drainit/drainit/internal/config"
)

// A drainit whose environment names a drainit above it (here: this test's parent, which runs
// it) refuses to start, in one line, before it opens or starts anything. The real binary's
// cases (PID 1, a shell in between, a stale variable, podman) are in the integration tests.
func TestNestedRefused(t *testing.T) {
	defer signal.Reset()
	parent, err := markerOf("/proc", os.Getppid())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.SupervisorEnv, parent.String())
	started := filepath.Join(t.TempDir(), "started")
	code, out := runCaptured(t, "--http-addr", "127.0.0.1:0", "--log-format", "json", "--", "/bin/sh", "-c", "echo > "+started)
	if code != 2 {
		t.Errorf("exit %d, want 2\n%s", code, out)
	}
	want := "drainit: started under drainit PID " + strconv.Itoa(os.Getppid()) + ", which already runs a stop sequence"
	if lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) ||
		!strings.Contains(lines[0], "unset "+config.SupervisorEnv) {
		t.Errorf("stderr %q, want one line starting %q and saying how to run it anyway", out, want)
	}
	if _, err := os.Stat(started); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the app ran (%v)", err)
	}
}

// The app runs with the variable naming this drainit, whatever was there before (a stale marker
// is replaced, not passed on); once the run is over the caller's environment is as it was.
func TestAppEnvironmentNamesDrainit(t *testing.T) {
	defer signal.Reset()
	stale := "pid=1 pidns=1 start=1"
	t.Setenv(config.SupervisorEnv, stale)
	got := filepath.Join(t.TempDir(), "env")
	code, out := runCaptured(t, "--log-format", "json", "--", "/bin/sh", "-c", `printf %s "$`+config.SupervisorEnv+`" > `+got)
	if code != 0 {
		t.Fatalf("exit %d, want 0: a stale marker refuses nothing\n%s", code, out)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	self, err := markerOf("/proc", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != self.String() {
		t.Errorf("the app's %s is %q, want this drainit's, %q", config.SupervisorEnv, b, self)
	}
	if v := os.Getenv(config.SupervisorEnv); v != stale {
		t.Errorf("after the run %s is %q, want it back at %q", config.SupervisorEnv, v, stale)
	}
}

// runCaptured runs runCmd in this process with args, and returns its exit code and what it
// wrote to stderr.
func runCaptured(t *testing.T, args ...string) (int, []byte) {
	t.Helper()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	code := runCmd(args, os.Stdout, stderr)
	out, err := os.ReadFile(stderr.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, out
}
