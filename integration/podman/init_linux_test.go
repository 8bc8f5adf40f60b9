package podman

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// initPath is where podman 4.3 bind-mounts the --init-path binary in the container and runs it
// as `initPath -- ENTRYPOINT CMD`.
const initPath = "/run/podman-init"

// drainit as the runtime's init: `podman run --init --init-path DRAINIT` in front of an image
// that knows nothing of it (testapp alone, as its ENTRYPOINT), configured only by DRAINIT_*
// environment variables. podman runs the host's drainit as PID 1 with the image's command after
// "--"; `podman stop` then gets the whole stop sequence: the drain, SIGTERM to the app after it,
// the app's exit status as the container's.
func TestPodmanInitIsDrainit(t *testing.T) {
	h := need(t)
	t.Parallel()
	const drain, stopTimeout = 2 * time.Second, 10
	id := h.startImage(t, imageApp, []string{"--init", "--init-path=" + h.drainit,
		"--env=DRAINIT_DRAIN_DELAY=2s", "--env=DRAINIT_GRACE_PERIOD=10s", "--env=DRAINIT_KILL_MARGIN=1s"},
		"slow-stop", "500ms")
	h.waitLog(t, id, "ready app", 10*time.Second)

	// How podman runs it: the init is the process podman starts, the image's command its
	// arguments after "--".
	var inspected []struct {
		Path  string
		Args  []string
		State struct{ Pid int }
	}
	out := h.must(t, "inspect", "--type", "container", "--format", "json", id)
	if err := json.Unmarshal([]byte(out), &inspected); err != nil || len(inspected) != 1 {
		t.Fatalf("podman inspect %.12s: cannot read %q: %v", id, out, err)
	}
	c := inspected[0]
	if want := []string{"--", "/testapp", "slow-stop", "500ms"}; c.Path != initPath || !slices.Equal(c.Args, want) {
		t.Errorf("podman runs %q %q, want %q %q", c.Path, c.Args, initPath, want)
	}
	// The container's PID 1, seen from the host: its executable is the very file given as
	// --init-path (bind-mounted, so the same inode), and it is PID 1 of the container's PID
	// namespace.
	hostPid := c.State.Pid
	exeInfo, err := proc.Exe("/proc", hostPid)
	if err != nil {
		t.Fatalf("the container's PID 1 (host pid %d): %v", hostPid, err)
	}
	binInfo, err := os.Stat(h.drainit)
	if err != nil {
		t.Fatal(err)
	}
	if exe, bin := exeInfo.Sys().(*syscall.Stat_t), binInfo.Sys().(*syscall.Stat_t); exe.Dev != bin.Dev || exe.Ino != bin.Ino {
		t.Errorf("the container's PID 1 runs device %d inode %d, not the --init-path binary %s (device %d inode %d)",
			exe.Dev, exe.Ino, h.drainit, bin.Dev, bin.Ino)
	}
	if ns := nsPid(t, hostPid); ns != "1" {
		t.Errorf("the process podman started is pid %s in the container, want 1", ns)
	}

	beforeStop := time.Now()
	took, stderr := h.stop(t, id, stopTimeout)
	t.Logf("podman stop --time %d took %s", stopTimeout, took)
	code, _ := h.exited(t, id)
	o := h.logs(t, id)

	if strings.Contains(stderr, podmanKilled) {
		t.Errorf("podman had to SIGKILL the container: %s", stderr)
	}
	if took >= stopTimeout*time.Second {
		t.Errorf("podman stop took %s, not less than its timeout %ds", took, stopTimeout)
	}
	if code != 0 {
		t.Errorf("container exit code %d, want 0, the app's status (slow-stop exits 0 on SIGTERM)", code)
	}
	got := o.appLine(t, "got app SIGTERM")
	if d := got.At.Sub(beforeStop); d < drain {
		t.Errorf("the app got SIGTERM %s after podman stop was called, before the drain delay %s", d, drain)
	}
	o.appLine(t, "stopped app") // the app finished its own shutdown: nobody killed it

	started := o.event(t, "app started")
	if !started.PID1 {
		t.Errorf("drainit's \"app started\" says pid1=false: it is not the container's PID 1")
	}
	ready := o.appLine(t, "ready app ")
	if started.Pid == nil || "ready app "+strconv.Itoa(*started.Pid) != ready.Text {
		t.Errorf("drainit started the app as pid %v, the app says %q: drainit is not its parent", started.Pid, ready.Text)
	}
	trigger := o.event(t, "stop sequence started")
	if trigger.Signal != "SIGTERM" {
		t.Errorf("stop sequence started on %q, want SIGTERM (podman stop's signal)", trigger.Signal)
	}
	draining := o.event(t, "draining: the app keeps serving")
	if draining.DrainDelay == nil || time.Duration(*draining.DrainDelay)*time.Millisecond != drain {
		t.Errorf("drainit drained for %v ms, want DRAINIT_DRAIN_DELAY, %s", draining.DrainDelay, drain)
	}
	sent := o.event(t, "stop signal sent")
	if sent.Signal != "SIGTERM" {
		t.Errorf("stop signal %q, want SIGTERM (the trigger, forwarded)", sent.Signal)
	}
	if el := sent.elapsed(t); el < drain || el > drain+slack {
		t.Errorf("drainit sent the stop signal %s after the trigger, want the drain delay %s (+%s)", el, drain, slack)
	}
	if d := got.At.Sub(trigger.at); d > drain+slack {
		t.Errorf("the app got SIGTERM %s after the trigger, want the drain delay %s (+%s)", d, drain, slack)
	}
	done := o.event(t, "drainit exiting")
	if done.Status == nil || *done.Status != code {
		t.Errorf("drainit logged exit status %v, the container's is %d", done.Status, code)
	}
}

// nsPid is the pid a host process has in its own (innermost) PID namespace, from the NSpid line
// of /proc/PID/status.
func nsPid(t *testing.T, hostPid int) string {
	t.Helper()
	v, err := proc.StatusField("/proc", hostPid, "NSpid")
	if err != nil {
		t.Fatalf("the pid of host pid %d in its namespace: %v", hostPid, err)
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		t.Fatalf("an empty NSpid line in /proc/%d/status", hostPid)
	}
	return f[len(f)-1]
}

// drainit as the runtime's init in front of an image whose ENTRYPOINT is already drainit: the
// image's drainit finds the init above it and refuses to run (exit 2, one line), so the
// container exits 2 at once with the reason in its log, rather than running two stop sequences
// whose second outlives `podman stop`'s timeout. With DRAINIT_HTTP_ADDR, which both read, the
// image's drainit used to exit 2 with "address already in use" instead: the init held the port.
func TestPodmanInitInFrontOfDrainit(t *testing.T) {
	h := need(t)
	for name, env := range map[string][]string{
		"no control server": nil,
		"DRAINIT_HTTP_ADDR": {"--env=DRAINIT_HTTP_ADDR=:8099"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts := append([]string{"--init", "--init-path=" + h.drainit, "--env=DRAINIT_DRAIN_DELAY=2s"}, env...)
			id := h.start(t, opts, "--", "/testapp", "slow-stop", "500ms")
			code, _ := h.exited(t, id)
			if code != 2 {
				t.Errorf("container exit code %d, want 2", code)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stdout, stderr, err := h.podman(ctx, "logs", id)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			if strings.Contains(stdout, "ready app") {
				t.Error("the app ran")
			}
			var plain []string // what is not the init's JSON log
			for l := range strings.SplitSeq(stderr, "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "{") {
					plain = append(plain, l)
				}
			}
			const want = "drainit: started under drainit PID 1, which already runs a stop sequence"
			if len(plain) != 1 || !strings.HasPrefix(plain[0], want) {
				t.Errorf("want one line from the image's drainit starting %q, got %q", want, plain)
			}
			done := h.logs(t, id).event(t, "drainit exiting")
			if done.Status == nil || *done.Status != 2 || !strings.Contains(done.Summary, "app exited 2") {
				t.Errorf("the init's last line: status %v, summary %q; want 2 and the app's exit", done.Status, done.Summary)
			}
		})
	}
}

// `podman exec` (as `docker exec` and `kubectl exec`) starts its process from outside the
// container, not as a descendant of drainit (its parent is outside the PID namespace): a
// drainit run that way is not nested, and runs its app.
func TestPodmanExecDrainitRuns(t *testing.T) {
	h := need(t)
	t.Parallel()
	id := h.start(t, nil, "--", "/testapp", "slow-stop", "100ms")
	h.waitLog(t, id, "ready app", 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout, stderr, err := h.podman(ctx, "exec", id, "/drainit", "--log-format", "json", "--", "/testapp", "exit", "7")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("podman exec drainit -- testapp exit 7: %v, want exit status 7 (the app's)\n%s%s", err, stdout, stderr)
	}
	if strings.Contains(stderr, "started under drainit") {
		t.Errorf("drainit under podman exec refused to run:\n%s", stderr)
	}
}

// The runtime's init (tini as `docker run --init` runs it, podman's catatonit) in front of an
// image whose ENTRYPOINT is drainit: drainit's parent is the container's PID 1, which resumes
// nothing. A SIGTSTP to drainit (an app's `kill -TSTP $PPID`; tini passes on `podman kill
// --signal TSTP` too) is passed on, and drainit does not stop itself: `podman stop` then
// drains and ends the app (exit 0, without podman's SIGKILL). drainit stopped itself and the
// app for good, and the container ended at podman's SIGKILL.
func TestPodmanInitAboveDrainitTSTP(t *testing.T) {
	h := need(t)
	for _, init := range []string{"/usr/bin/tini-static", "/usr/bin/catatonit"} {
		t.Run(filepath.Base(init), func(t *testing.T) {
			if _, err := os.Stat(init); err != nil {
				testenv.SkipUnlessCI(t, "no "+init+" (Debian's tini and catatonit): "+err.Error())
			}
			t.Parallel()
			id := h.start(t, []string{"--init", "--init-path=" + init, "--env=DRAINIT_DRAIN_DELAY=500ms",
				"--env=DRAINIT_GRACE_PERIOD=10s", "--env=DRAINIT_LOG_LEVEL=debug"}, "--", "/testapp", "signals")
			h.waitLog(t, id, "ready app", 10*time.Second)
			kids := proc.Children("/proc", h.hostPid(t, id))
			if len(kids) != 1 {
				t.Fatalf("the init's children: %v, want drainit alone", kids)
			}
			if err := syscall.Kill(kids[0], syscall.SIGTSTP); err != nil {
				t.Fatal(err)
			}
			h.waitLog(t, id, `"signal":"SIGTSTP","pgid"`, 10*time.Second) // passed on to the app's group
			if code, _ := h.stopCleanly(t, id, 10); code != 0 {
				t.Errorf("container exit code %d after SIGTSTP then podman stop, want 0", code)
			}
		})
	}
}
