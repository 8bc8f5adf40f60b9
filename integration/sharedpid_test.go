package integration

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

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
	argv := append(startSandbox(t, false).enter(true), drainitBin, "--drain-delay", "0", "--log-format", "json", "--log-level", "info", "--", testappBin, "signals")
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

// TestSharedPIDCleanup: drainit's stop among another container's processes, which it can see
// and, as root, signal. The app exits on SIGTERM and leaves its tree (a group member, an orphan,
// a setsid'd daemon, each surviving SIGTERM); drainit's cleanup gives each of them one SIGTERM,
// then SIGKILL, and signals nothing else: not the neighbour's tree (started into the namespace
// as another container's), nor the namespace's PID 1 (startSandbox checks it).
func TestSharedPIDCleanup(t *testing.T) {
	for _, forward := range []string{"group", "child"} {
		t.Run(forward, func(t *testing.T) {
			d := start(t, spec{mode: sharedPID, args: []string{"--drain-delay", "0", "--cleanup-wait", "500ms", "--forward", forward},
				app: app("tree", "-hold", "gc,orphan,daemon")})
			d.stdout.AwaitPID(t, waitTimeout, "ready app")
			neighbour := startNeighbour(t, d, "tree")
			neighbour.AwaitPID(t, waitTimeout, "ready app")
			d.signal(syscall.SIGTERM)
			if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
				t.Fatalf("drainit: %v, want exit 0 (the app's status)\n%s", got, d.dump())
			}
			// The stop signal (to the app's group, or the app alone), then one SIGTERM each from
			// the cleanup, as kill(-1) gives it as PID 1. The group's members may take the two as
			// one: the kernel keeps one SIGTERM pending.
			most := map[string]int{"app": 1, "gc": 1, "orphan": 1, "daemon": 1}
			if forward == "group" {
				most["gc"], most["orphan"] = 2, 2
			}
			for who, m := range most {
				if n := d.stdout.Count(func(l string) bool { return l == "got "+who+" SIGTERM" }); n < 1 || n > m {
					t.Errorf("the app's %s got SIGTERM %d times, want 1 to %d\n%s", who, n, m, d.dump())
				}
			}
			if kills := d.stderr.Count(lines.Containing("processes left behind by the app still run: SIGKILL")); kills != 1 {
				t.Errorf("drainit SIGKILLed the leftovers %d times, want once\n%s", kills, d.dump())
			}
			if got := neighbour.Count(func(l string) bool { return strings.HasPrefix(l, "got ") }); got > 0 {
				t.Errorf("the neighbour's tree got signals:\n%s", neighbour.Tail(20))
			}
		})
	}
}

// TestSharedPIDAdaptiveDrain: the adaptive drain in a pod of its own network (not hostNetwork)
// whose PID namespace is shared: a neighbour's listener in the pod's network, busy through the
// drain, neither keeps the drain open nor is taken for the app's, although drainit can see the
// neighbour's processes. With a listener in the namespace that is not the app's, drainit counts
// with sock-diag, filtered to the app's listener (the PassiveOpens counter would count the
// neighbour's connections too).
func TestSharedPIDAdaptiveDrain(t *testing.T) {
	const quiet = 500 * time.Millisecond
	d := start(t, spec{mode: sharedPID, netns: true, app: app("tree", "-addr", "127.0.0.1:8080"),
		args: []string{"--drain", "adaptive", "--drain-quiet", quiet.String(), "--drain-max", "5s", "--log-format", "json"}})
	d.stdout.AwaitPID(t, waitTimeout, "ready app")
	startNeighbour(t, d, "tree", "-addr", "127.0.0.1:8081").AwaitPID(t, waitTimeout, "ready app")
	// A client in the pod's network: a new connection to the neighbour every 50 ms for 3 s.
	client := startNeighbour(t, d, "get", "-n", "60", "-every", "50ms", "http://127.0.0.1:8081/")
	client.AwaitPrefix(t, waitTimeout, "got 200 ")
	d.signal(syscall.SIGTERM)
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
	var over logEntry
	for _, e := range d.logs() {
		if e.msg() == "adaptive drain over" {
			over = e
		}
	}
	n, _ := over.int("new_connections")
	listeners, _ := over.int("listeners")
	if over.str("reason") != "quiet" || n != 0 || listeners != 1 || over.str("method") != "sock-diag" {
		t.Fatalf("the adaptive drain ended %q with %d new connections on %d listeners by %q, want quiet, 0, 1, sock-diag\n%s",
			over.str("reason"), n, listeners, over.str("method"), d.dump())
	}
	end, err := over.time()
	if err != nil {
		t.Fatal(err)
	}
	// The neighbour was busy until the drain ended: it answered within its last quiet period.
	if last := client.Lines(); len(last) == 0 || last[len(last)-1].At.Before(end.Add(-quiet)) {
		t.Errorf("the neighbour's client stopped before the drain's last %s: the test shows nothing\n%s", quiet, client.Tail(5))
	}
}

// startNeighbour starts testapp with args into the pod of drainit's run d, as another
// container's process, and returns its output. It is killed when the test ends.
func startNeighbour(t *testing.T, d *drainitRun, args ...string) *lines.Log {
	t.Helper()
	argv := append(append(d.sandbox.enter(false), testappBin), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	out := lines.New("neighbour")
	cmd.Stdout, cmd.Stderr = out, out
	// The tree's orphans, the namespace's PID 1's, hold its output until the namespace ends,
	// after this test: Wait does not wait for them.
	cmd.WaitDelay = 100 * time.Millisecond
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// nsenter's child first, which nsenter then reaps: killed first, nsenter would leave
		// it to the machine's init, and the namespace's end waits until that has reaped it.
		for _, p := range proc.Children("/proc", cmd.Process.Pid) {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = cmd.Wait()
	})
	return out
}
