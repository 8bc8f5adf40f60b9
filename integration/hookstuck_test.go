package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// An offline exec hook whose program cannot be opened (a script on a stuck network or CSI
// volume; here a write lease the test holds on it, which holds every open until the lease is
// given back) neither freezes drainit nor holds up the stop. Go forks with vfork: the forking
// thread waited, with drainit's one P, for the child's exec to open the program, and the whole
// of drainit stopped (no signal handled, no SIGKILL, no exit) until the open returned. Now the
// hook fails at its timeout, the drain follows, and the app gets its SIGTERM before the kill
// point.
func TestOfflineHookStuckInExec(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		script := filepath.Join(t.TempDir(), "deregister")
		if err := os.WriteFile(script, []byte("#!/bin/sh\necho deregistered\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(script, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
			t.Fatalf("taking a write lease on the hook's program: %v", err)
		}
		// Given back before the test ends: the stuck exec then goes on (or is gone).
		defer func() { _, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK) }()
		const grace = 10 * time.Second // kill point 8 s, the stop signal by 6 s
		d := start(t, spec{mode: m, args: []string{"--grace-period", grace.String(), "--drain-delay", "1s", "--hook-timeout", "2s",
			"--offline-exec", script}, app: app("signals")})
		d.stdout.AwaitLine(t, waitTimeout, "the app ready", func(s string) bool { return strings.Contains(s, "ready app ") })
		sent := time.Now()
		d.signal(syscall.SIGTERM)
		d.stdout.AwaitLine(t, waitTimeout, "the app's SIGTERM", func(s string) bool { return strings.Contains(s, "got app SIGTERM") })
		if took := time.Since(sent); took > 8*time.Second {
			t.Errorf("the app's SIGTERM came %s after the trigger, at or past the kill point (8s)", took.Round(time.Millisecond))
		}
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0 (the app's)\n%s", got, d.dump())
		}
	})
}

// What a post-stop hook leaves running (`sleep 300 &`) does not outlive drainit where it is not
// PID 1 (as PID 1 its exit ends the PID namespace): it outlived it, reparented to the next
// reaper above.
func TestPostStopLeftoversEnd(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	d := start(t, spec{mode: subreaper, args: []string{"--drain-delay", "0",
		"--post-stop-exec", `["sh","-c","sleep 300 >/dev/null 2>&1 & echo $! > ` + pidFile + `"]`}, app: []string{"true"}})
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the post-stop hook wrote no pid: %v\n%s", err, d.dump())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Gone, or a zombie the next reaper above collects (this test process is no reaper).
	waitUntil(t, waitTimeout, "the post-stop hook's sleep ended", func() bool {
		s := procState(pid)
		return s == 0 || s == 'Z'
	})
}
