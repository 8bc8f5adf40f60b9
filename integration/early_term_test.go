package integration

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTermInFirstMilliseconds sends SIGTERM to drainit as PID 1 at a random moment 0-2 ms after
// its pid is known (unshare has forked it; it may not have exec'd drainit yet), many times, and
// classifies what happened. Each outcome must be one the README's known limit names:
//   - reached: drainit caught it; the stop sequence ran and the app (if started) got SIGTERM;
//   - exit 2: it came after the Go runtime installed its handlers but before drainit registered
//     its own (package signals/early), and the runtime's default for TERM ended drainit, which
//     as PID 1 it can only do with status 2, logging nothing more. The runtime dies on the
//     thread that took the signal while the others run on, so on a loaded machine drainit may
//     have started the app (and logged "app started") by then; the kernel kills it with the
//     namespace;
//   - lost: it came before the Go runtime installed any handler (or before the exec), and the
//     kernel discards a signal to a PID namespace's init that has no handler; the app ran to
//     its end.
//
// Anything else (drainit killed, an app left running, another status) fails. The counts are
// logged: they measure how wide the two windows are (see the package doc of signals/early).
// Measured on 2 vCPUs with a load of about 2.5, 300 signals each run: registering in main (as
// before signals/early) gave exit 2 for 160-171, lost 80-101; registering during package
// initialisation gives exit 2 for 103-114 (about 6 of them after the app had started), lost
// 79-162, of which only 6-23 were sent before drainit's exec. The lost window is the Go
// runtime's own start before it installs its handlers, which no Go program can shorten.
func TestTermInFirstMilliseconds(t *testing.T) {
	requireRoot(t)
	reps := 300
	if testing.Short() {
		reps = 30
	}
	const window = 2 * time.Millisecond
	count := map[string]int{}
	preExec := map[string]int{}
	lateExit2 := 0 // exit 2 after the app had started
	for range reps {
		d := start(t, spec{mode: pid1, args: []string{"--drain-delay", "0", "--log-format", "json"}, app: app("sleep", "100ms")})
		if d.pid == 0 {
			t.Fatalf("drainit exited before its pid was known\n%s", d.dump())
		}
		delay := time.Duration(rand.Int64N(int64(window)))
		for t0 := time.Now(); time.Since(t0) < delay; {
			// A spin, not a sleep: the delay is what is measured, and a timer's slack on a
			// loaded machine is larger than the window.
		}
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(d.pid) + "/comm")
		d.signal(syscall.SIGTERM)
		got := d.wait(waitTimeout)
		started, appStarted, exiting := false, false, false
		for _, e := range d.logs() {
			started = started || strings.HasPrefix(e.msg(), "stop sequence started")
			appStarted = appStarted || e.msg() == "app started"
			exiting = exiting || e.msg() == "drainit exiting"
		}
		var outcome string
		switch {
		case started:
			outcome = "reached"
		case got == exitStatus{code: 2} && !exiting:
			outcome = "exit 2"
			if appStarted {
				lateExit2++
			}
		case got == exitStatus{code: 0}:
			outcome = "lost"
		default:
			t.Fatalf("SIGTERM %s after start: drainit %v without a stop sequence\n%s", delay, got, d.dump())
		}
		count[outcome]++
		if name := filepath.Base(drainitBin); strings.TrimSpace(string(comm)) != name[:min(len(name), 15)] {
			preExec[outcome]++
		}
	}
	t.Logf("%d SIGTERMs 0-%s after PID 1 existed: reached %d, exit 2 %d (%d of them after the app had started), lost %d (sent before drainit's exec: reached %d, exit 2 %d, lost %d)",
		reps, window, count["reached"], count["exit 2"], lateExit2, count["lost"], preExec["reached"], preExec["exit 2"], preExec["lost"])
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
			// milliseconds, a Go program's start) finds the runtime's default, which ignores
			// USR1, ALRM and 40. What is tested is the steady state.
			waitUntil(t, waitTimeout, "drainit sleep asleep", func() bool { return procState(cmd.Process.Pid) == 'S' })
			deadline := time.After(waitTimeout)
		send:
			for {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
				select {
				case <-done:
					break send
				case <-time.After(100 * time.Millisecond):
				case <-deadline:
					_ = cmd.Process.Kill()
					t.Fatalf("drainit sleep survived %v for %s", sig, waitTimeout)
				}
			}
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("drainit sleep: %v, want killed by %v", cmd.ProcessState, sig)
			}
			if stderr.Len() > 0 {
				t.Errorf("drainit sleep wrote %q, want nothing", stderr.String())
			}
		})
	}
}
