package integration

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/internal/proc"
)

// TestSharedPIDJobStop: in a PID namespace shared with other containers (shareProcessNamespace)
// drainit is not PID 1 and runs below the runtime, which resumes nothing. A SIGTSTP sent to it
// (by a process of another container, which can see it) is passed on and stops nothing: drainit
// stopped itself and the app, as a shell's job does for the shell to resume it, and stayed
// stopped, so that the pod's stop would end with the runtime's SIGKILL and no drain.
func TestSharedPIDJobStop(t *testing.T) {
	d := start(t, spec{mode: sharedPID, args: []string{"--drain-delay", "0", "--log-level", "debug"}, app: app("signals")})
	d.stdout.AwaitPID(t, waitTimeout, "ready app")
	d.signal(syscall.SIGTSTP)
	d.stderr.AwaitLine(t, waitTimeout, "drainit passing SIGTSTP on", lines.Containing(`"signal":"SIGTSTP"`))
	// A signal it forwards after that shows it running: stopped, it would keep it pending.
	d.signal(syscall.SIGUSR1)
	d.stdout.AwaitExact(t, waitTimeout, "got app SIGUSR1")
	if st := procState(d.pid); st == 'T' {
		t.Fatalf("drainit is stopped after SIGTSTP, with nothing above it to resume it\n%s", d.dump())
	}
	d.signal(syscall.SIGTERM)
	d.stdout.AwaitExact(t, waitTimeout, "got app SIGTERM")
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
}

// TestSharedPIDTerminal: the same pod with a terminal (tty: true, `kubectl attach -it`): the app
// has the foreground, and Ctrl-Z stops it. drainit leaves it stopped and says how to resume it,
// as PID 1 does; it stopped itself too, for a shell that is not there.
func TestSharedPIDTerminal(t *testing.T) {
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	argv := append(sharedPIDLauncher(t, true), drainitBin, "--drain-delay", "0", "--log-format", "json", "--log-level", "info", "--", testappBin, "signals")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = t.TempDir(), cleanEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	err := cmd.Start()
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	tty := lines.Read("terminal", master)
	d := watch(t, sharedPID, cmd, tty, tty)
	kids := []int{}
	waitUntil(t, waitTimeout, "nsenter forking drainit", func() bool {
		kids = proc.Children("/proc", cmd.Process.Pid)
		return len(kids) == 1
	})
	d.pid = kids[0]

	started := tty.AwaitLine(t, waitTimeout, "drainit's \"app started\"", lines.Containing(`"message":"app started"`)).Text
	if !strings.Contains(started, `"tty":true`) || !strings.Contains(started, `"pid1":false`) {
		t.Fatalf("drainit is not on its terminal, or is PID 1: %s", started)
	}
	appPid := d.appPID()
	tty.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
	if fg := foreground(t, master); fg == 0 {
		t.Fatal("the terminal has no foreground group")
	}

	if _, err := master.Write([]byte{0x1a}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "drainit saying the app is stopped", lines.Containing("app stopped by job control"))
	if procState(appPid) != 'T' {
		t.Errorf("the app is in state %c after Ctrl-Z, want stopped (T)", procState(appPid))
	}
	if procState(d.pid) == 'T' {
		t.Fatalf("drainit stopped itself after the app's Ctrl-Z, with nothing above it to resume it\n%s", d.dump())
	}
	if err := syscall.Kill(appPid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGCONT", lines.Containing("got app SIGCONT"))
	d.signal(syscall.SIGTERM)
	tty.AwaitLine(t, waitTimeout, "the app's SIGTERM", lines.Containing("got app SIGTERM"))
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
}
