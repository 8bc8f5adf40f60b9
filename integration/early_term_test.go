package integration

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/pod"
)

// raceWindow is how long after drainit's entry point ran TestStopSignalAtStart sends its SIGTERM: from at
// once to past the ~1.5 ms in which drainit was seen to lose it.
const raceWindow = 2 * time.Millisecond

// startExact starts drainit (as PID 1 of a PID namespace of its own when pid1: clone and exec,
// nothing between, so the namespace has no /proc of its own; else as a plain child) and returns
// once its exec has happened: os/exec's Start returns once the child's exec has closed the pipe
// it reports exec errors on. The run is watched as a subreaper run, whatever pid1 says: its
// wait status is drainit's own (no unshare in between) and its descendants are this process's.
func startExact(t *testing.T, pid1 bool, args []string, app ...string) (*drainitRun, time.Time) {
	t.Helper()
	argv := append(append(append([]string{drainitBin}, args...), "--"), app...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if pid1 {
		l, err := pod.Prepare(pod.Direct, argv)
		if err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = l.Sys
	}
	cmd.Dir, cmd.Env = t.TempDir(), cleanEnv()
	outR, outW := pipe(t)
	errR, errW := pipe(t)
	cmd.Stdout, cmd.Stderr = outW, errW
	err := cmd.Start()
	execd := time.Now()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		t.Fatalf("starting drainit: %v", err)
	}
	return watch(t, subreaper, cmd, lines.Read("stdout", outR), lines.Read("stderr", errR)), execd
}

// TestStopSignalAtStart sends SIGTERM to drainit 0-2 ms after its entry point ran (entryRan: its
// first instruction, just after the exec), over and over, as PID 1 and not, and fails for any run whose outcome the README's "Exit status" does not give for a
// stop signal at start. Each run must end one of two ways:
//   - stopped: drainit took the signal and ran the stop sequence (its entry point caught it
//     before the Go runtime had its handlers, or it came once drainit had registered it);
//   - refused: it came between the runtime's handlers and drainit's registration, when the
//     runtime dies by TERM: drainit's entry point wrote its one line and exited 143, before
//     starting the app (internal/startsig, "A stop signal before drainit can take it").
//
// Before the entry point caught it, the same harness saw (1000 runs each, 2-vCPU VM): as PID 1,
// stopped 150, exit 2 with no line 284, lost (the kernel discards a signal to an init with no
// handler) 566; not as PID 1, stopped 284, killed by the SIGTERM 716. The counts per delay are
// logged. DRAINIT_START_RACE_RUNS sets the runs per mode (200 unless told, 20 with -short).
func TestStopSignalAtStart(t *testing.T) {
	requireRoot(t)
	runs := 200
	if testing.Short() {
		runs = 20
	}
	if v := os.Getenv("DRAINIT_START_RACE_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DRAINIT_START_RACE_RUNS=%q: want a count", v)
		}
		runs = n
	}
	const buckets = 4
	for _, pid1 := range []bool{true, false} {
		t.Run(map[bool]string{true: "pid1", false: "subreaper"}[pid1], func(t *testing.T) {
			var count [buckets]map[string]int
			for i := range count {
				count[i] = map[string]int{}
			}
			for i := range runs {
				delay := raceWindow * time.Duration(i) / time.Duration(runs)
				d, _ := startExact(t, pid1, []string{"--drain-delay", "0", "--log-format", "json"}, app("sleep", "100ms")...)
				running := entryRan(t, d.pid)
				for time.Since(running) < delay {
					// A spin, not a sleep: the delay is what is measured, and a timer's slack
					// on a loaded machine is larger than the window.
				}
				if err := syscall.Kill(d.pid, syscall.SIGTERM); err != nil {
					t.Fatalf("SIGTERM to drainit: %v", err)
				}
				count[min(buckets-1, int(delay*buckets/raceWindow))][stopOutcome(t, d, delay)]++
				d.kill()
			}
			var b strings.Builder
			for i, c := range count {
				fmt.Fprintf(&b, "; %v-%v: stopped %d, refused %d", raceWindow*time.Duration(i)/buckets,
					raceWindow*time.Duration(i+1)/buckets, c["stopped"], c["refused"])
			}
			t.Logf("%d SIGTERMs 0-%v after drainit's entry point ran%s", runs, raceWindow, b.String())
		})
	}
}

// entryRan waits until drainit's entry point has put its handler on SIGTERM (SigCgt in
// /proc/pid/status), the first thing it does, and returns when it saw it. The time between the
// exec's report (os/exec's Start returns as the kernel closes the new image's close-on-exec
// files) and that moment is the kernel's: the new image's first instruction has yet to run, the
// signal still has the disposition it had before (the default, for any init), and a SIGTERM sent
// then is discarded (an init) or ends the process. No program can act before its first
// instruction; only the one that execs it could, by blocking the signal across the exec.
func entryRan(t *testing.T, pid int) time.Time {
	t.Helper()
	for deadline := time.Now().Add(waitTimeout); time.Now().Before(deadline); {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		if parseMask(t, statusLine(string(b), "SigCgt:"), "SigCgt:")&(1<<(syscall.SIGTERM-1)) != 0 {
			return time.Now()
		}
	}
	t.Fatalf("drainit (pid %d) has no handler on SIGTERM after %v: its entry point did not run", pid, waitTimeout)
	return time.Time{}
}

// refusedAtStart is the one line drainit writes when a SIGTERM comes as it starts, too early for
// the stop sequence (internal/startsig).
const refusedAtStart = "drainit: SIGTERM came as drainit started, before it could handle it: exiting 143, the app not started"

// stopOutcome waits for the run d ends and names what came of the SIGTERM sent delay after its
// exec (see TestStopSignalAtStart), failing the test for anything else.
func stopOutcome(t *testing.T, d *drainitRun, delay time.Duration) string {
	t.Helper()
	got := d.wait(waitTimeout)
	stopped, exiting := false, false
	for _, e := range d.logs() {
		stopped = stopped || strings.HasPrefix(e.msg(), "stop sequence started")
		exiting = exiting || e.msg() == "drainit exiting"
	}
	switch {
	case stopped && exiting:
		return "stopped"
	case got == exitStatus{code: 143} && slices.Equal(d.stderr.Texts(), []string{refusedAtStart}) && len(d.stdout.Texts()) == 0:
		return "refused"
	}
	t.Fatalf("SIGTERM %v after drainit's exec: drainit %v, neither a stop sequence nor the refusal the README documents\n%s", delay, got, d.dump())
	return ""
}

// drainit registers its signals while the program initialises, before any package outside the
// standard library's basics (zerolog, YAML, net, its configuration): what the window in
// TestTermInFirstMilliseconds measures is then the Go runtime's own start. The Go runtime's
// inittrace lists the packages in the order they are initialised.
func TestSignalsRegisteredBeforeHeavyInit(t *testing.T) {
	cmd := exec.Command(drainitBin, "--log-format", "json", "--", "true")
	cmd.Env = append(cleanEnv(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("drainit: %v\n%s", err, out)
	}
	const early = "github.com/drainit/drainit/signals/early"
	var before []string
	found := false
	for l := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		if f[1] == early {
			found = true
			break
		}
		before = append(before, f[1])
	}
	if !found {
		t.Fatalf("no %s in drainit's init trace: its signals are registered only once main runs\n%s", early, out)
	}
	for _, p := range before {
		// golang.org/x/sys/unix is one of the registration's own imports.
		first, _, _ := strings.Cut(p, "/")
		if (strings.Contains(first, ".") && p != "golang.org/x/sys/unix") || p == "net" || strings.HasPrefix(p, "net/") || strings.HasPrefix(p, "crypto/") {
			t.Errorf("%s is initialised before drainit registers its signals", p)
		}
	}
}

// The subcommands that run no app give the early registration back, and `drainit sleep` (a
// preStop hook) ends by a signal as sleep(1) does, killed by it: SIGTERM, and the ones the Go
// runtime would ignore (USR1, ALRM, a real-time one). (QUIT, which it would answer with a
// goroutine dump, takes the same path; sent in a Go program's first milliseconds it still gets
// the dump, the known limit of the README's "a signal in drainit's first millisecond", so it
// cannot be sent again and again here.)
func TestSubcommandKeepsDefaultSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGALRM, 40} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			// A SIGTERM that lands before drainit has registered it (its first milliseconds;
			// 'S' is also a thread of the Go runtime waiting as it starts) gets the start's
			// refusal, which TestStopSignalAtStart is about: that run starts again.
			for range 5 {
				ps, stderr := sleepUntilSignalled(t, sig)
				if sig == syscall.SIGTERM && ps.ExitCode() == 143 && stderr == refusedAtStart+"\n" {
					continue
				}
				if ws, ok := ps.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
					t.Errorf("drainit sleep: %v, want killed by %v", ps, sig)
				}
				if stderr != "" {
					t.Errorf("drainit sleep wrote %q, want nothing", stderr)
				}
				return
			}
			t.Errorf("drainit sleep refused %v as it started 5 times in 5, want it asleep by the time it sleeps", sig)
		})
	}
}

// sleepUntilSignalled starts `drainit sleep 60s`, sends it sig once it is asleep and again every
// 100 ms until it ends, and returns how it ended and what it wrote on stderr.
func sleepUntilSignalled(t *testing.T, sig syscall.Signal) (*os.ProcessState, string) {
	t.Helper()
	cmd := exec.Command(drainitBin, "sleep", "60s")
	cmd.Env = cleanEnv()
	cmd.Dir = t.TempDir() // where QUIT's core dump goes, if the core limit lets one be written
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Sent again until it ends: one sent before drainit sleep has caught it (in its first
	// milliseconds, a Go program's start) finds the runtime's default, which ignores USR1, ALRM
	// and 40. What is tested is the steady state.
	waitUntil(t, waitTimeout, "drainit sleep asleep", func() bool { return procState(cmd.Process.Pid) == 'S' })
	deadline := time.After(waitTimeout)
	for {
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			return cmd.ProcessState, stderr.String()
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("drainit sleep survived %v for %s", sig, waitTimeout)
		}
	}
}
