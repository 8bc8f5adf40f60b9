package integration

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testbin"
)

// ignoring is a launcher that ignores HUP and TSTP and execs the rest of its arguments, as
// `nohup`, or `trap "" HUP TSTP; exec drainit …` in an entrypoint script, do.
var ignoring = []string{"sh", "-c", `trap "" HUP TSTP; exec "$@"`, "sh"}

// appIgnored runs drainit as s describes, with grep as the app, which reports its own ignored
// signals (/proc/self/status, SigIgn), and returns that set as a bit mask (bit N-1 for signal
// N), with the finished run for its log.
func appIgnored(t *testing.T, s spec) (uint64, *drainitRun) {
	t.Helper()
	s.app = []string{"grep", "^SigIgn:", "/proc/self/status"}
	d := start(t, s)
	line := d.stdout.AwaitLine(t, waitTimeout, "the app's SigIgn line", lines.Containing("SigIgn:")).Text
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
	return parseSigIgn(t, line), d
}

// parseSigIgn reads a /proc/PID/status SigIgn line.
func parseSigIgn(t *testing.T, line string) uint64 {
	t.Helper()
	return parseMask(t, line, "SigIgn:")
}

// parseMask reads a signal mask from a /proc/PID/status line: field, then the mask in hex.
func parseMask(t *testing.T, line, field string) uint64 {
	t.Helper()
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, field)), 16, 64)
	if err != nil {
		t.Fatalf("reading %q: %v", line, err)
	}
	return mask
}

func ignored(mask uint64, sig syscall.Signal) bool { return mask&(1<<(uint(sig)-1)) != 0 }

// What was ignored when drainit started stays ignored for the app, as exec keeps it (and tini
// does): HUP under nohup, TSTP under a launcher that ignores it. Without the launcher the app
// starts with them at their default.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		mask, _ := appIgnored(t, spec{mode: m, launcher: ignoring})
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTSTP} {
			if !ignored(mask, sig) {
				t.Errorf("drainit started with %v ignored, the app has it not ignored (SigIgn %016x)", sig, mask)
			}
		}
		mask, _ = appIgnored(t, spec{mode: m})
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTSTP} {
			if ignored(mask, sig) {
				t.Errorf("drainit started with %v at its default, the app has it ignored (SigIgn %016x)", sig, mask)
			}
		}
	})
}

// A signal ignored when drainit started reaches neither drainit nor the app: under nohup, a
// SIGHUP to drainit is not passed on (the whole tree is immune, as it would be without drainit).
func TestIgnoredSignalNotForwarded(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		d := start(t, spec{mode: m, launcher: ignoring, args: []string{"--drain-delay", "0"}, app: app("signals")})
		d.stdout.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
		d.signal(syscall.SIGHUP)
		// The app records signals in the order it gets them, and drainit forwards them in the
		// order it gets them: had the HUP been forwarded, it would show before USR1.
		d.signal(syscall.SIGUSR1)
		d.stdout.AwaitLine(t, waitTimeout, "the app's SIGUSR1", lines.Containing("got app SIGUSR1"))
		d.signal(syscall.SIGTERM)
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
		}
		if n := d.stdout.Count(func(s string) bool { return strings.Contains(s, "got app SIGHUP") }); n != 0 {
			t.Errorf("drainit, started with SIGHUP ignored, forwarded a SIGHUP to the app\n%s", d.dump())
		}
	})
}

// trapped are signals a shell script can ignore before it execs drainit, besides HUP and TSTP:
// the ones the Go runtime takes over before drainit's code runs (QUIT, TERM, PIPE, USR1, …),
// XCPU and 40 (RTMIN+6) among those drainit registers only once the app starts (signals.Late).
var trapped = []syscall.Signal{syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGPIPE, syscall.SIGUSR1,
	syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGWINCH, syscall.SIGXCPU, 40}

// trapping ignores the trapped signals and execs the rest of its arguments, as
// `trap "" PIPE …; exec drainit …` in an entrypoint script does.
var trapping = []string{"sh", "-c", `trap "" QUIT TERM PIPE USR1 USR2 ALRM WINCH XCPU 40; exec "$@"`, "sh"}

// Every signal ignored when drainit started stays ignored for the app, not only the few the Go
// runtime leaves visible: drainit reads them at its own ELF entry point, before the runtime
// starts (internal/startsig; the tests' drainit is linked with it, as the release is). Its debug
// log says so.
func TestEveryIgnoredSignalStaysIgnored(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		mask, d := appIgnored(t, spec{mode: m, launcher: trapping, args: []string{"--log-level", "debug"}})
		for _, sig := range trapped {
			if !ignored(mask, sig) {
				t.Errorf("drainit started with %v ignored, the app has it not ignored (SigIgn %016x)", sig, mask)
			}
		}
		if n := d.stderr.Count(func(s string) bool { return strings.Contains(s, `"entry_point":true`) }); n != 1 {
			t.Errorf("%d debug lines with entry_point true, want 1\n%s", n, d.dump())
		}
	})
}

// With every trigger ignored (TERM and INT, the defaults), no signal can start the stop sequence:
// drainit says so at start, once, as a warning, rather than leave the user to find out at the
// first rollout.
func TestAllTriggersIgnoredWarns(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		_, d := appIgnored(t, spec{mode: m, launcher: []string{"sh", "-c", `trap "" TERM INT; exec "$@"`, "sh"}})
		if n := d.stderr.Count(func(s string) bool { return strings.Contains(s, "every trigger signal was ignored") }); n != 1 {
			t.Errorf("%d warnings that every trigger was ignored, want 1\n%s", n, d.dump())
		}
	})
}

// The exceptions drainit cannot keep ignored, which the app then gets at their default: CHLD,
// which drainit must catch to learn the app's exit status (ignored, the kernel would reap the
// app itself), URG, which the Go runtime preempts its threads with, and SEGV, one of the
// runtime's fault handlers. Started with them ignored, drainit still reports the app's exit
// status, and says at start, in one line, which ignores the app does not get: tini keeps SEGV
// ignored, and drainit dropped it without a word.
func TestIgnoredChildSignalStillReaped(t *testing.T) {
	lost := []syscall.Signal{syscall.SIGSEGV, syscall.SIGCHLD, syscall.SIGURG}
	eachMode(t, func(t *testing.T, m mode) {
		d := start(t, spec{mode: m, ignore: lost, app: []string{"sh", "-c", "grep ^SigIgn: /proc/$$/status; exit 7"}})
		line := d.stdout.AwaitLine(t, waitTimeout, "the app's SigIgn line", lines.Containing("SigIgn:")).Text
		if got := d.wait(waitTimeout); got != (exitStatus{code: 7}) {
			t.Fatalf("drainit: %v, want the app's exit 7\n%s", got, d.dump())
		}
		mask := parseSigIgn(t, line)
		for _, sig := range lost {
			if ignored(mask, sig) {
				t.Errorf("the app has %v ignored (SigIgn %016x), which drainit cannot keep", sig, mask)
			}
		}
		// (CHLD is not among them as PID 1: unshare --fork, which makes the namespace, puts it
		// back to the default to wait for drainit.)
		if n := d.stderr.Count(func(s string) bool {
			return strings.Contains(s, "that the app gets at their default action") && strings.Contains(s, `"SIGSEGV"`) &&
				strings.Contains(s, `"SIGURG"`)
		}); n != 1 {
			t.Errorf("%d lines saying the app gets SEGV and URG at their default, want 1\n%s", n, d.dump())
		}
	})
}

// Built without its entry point (-tags noentrypoint, as for an architecture it is not written
// for: 386, loong64, mips…), drainit sees an inherited SIG_IGN only
// where the Go runtime leaves one visible: HUP and INT, and TSTP, TTIN and TTOU. It keeps those;
// PIPE, which the runtime hides, reaches the app at its default. Its debug log says which.
func TestIgnoredSignalsWithoutEntryPoint(t *testing.T) {
	bin, err := testbin.DrainitWithoutEntry()
	if err != nil {
		t.Fatal(err)
	}
	launcher := []string{"sh", "-c", `trap "" HUP TSTP PIPE; exec "$@"`, "sh"}
	eachMode(t, func(t *testing.T, m mode) {
		mask, d := appIgnored(t, spec{mode: m, bin: bin, launcher: launcher, args: []string{"--log-level", "debug"}})
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTSTP} {
			if !ignored(mask, sig) {
				t.Errorf("drainit started with %v ignored, the app has it not ignored (SigIgn %016x)", sig, mask)
			}
		}
		if ignored(mask, syscall.SIGPIPE) {
			t.Errorf("the app has SIGPIPE ignored (SigIgn %016x): the Go runtime no longer hides it; "+
				"early.InheritedIgnored's doc and the README say it does", mask)
		}
		if n := d.stderr.Count(func(s string) bool { return strings.Contains(s, `"entry_point":false`) }); n != 1 {
			t.Errorf("%d debug lines with entry_point false, want 1\n%s", n, d.dump())
		}
	})
}

// With every signal drainit registers during its initialisation ignored (TERM, INT, HUP, QUIT),
// none is left to register there; they stay ignored for the app, and the signals registered
// after them still reach it.
func TestEndingSignalsAllIgnored(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		launcher := []string{"sh", "-c", `trap "" TERM INT HUP QUIT; exec "$@"`, "sh"}
		mask, _ := appIgnored(t, spec{mode: m, launcher: launcher})
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT} {
			if !ignored(mask, sig) {
				t.Errorf("drainit started with %v ignored, the app has it not ignored (SigIgn %016x)", sig, mask)
			}
		}
		d := start(t, spec{mode: m, launcher: launcher, args: []string{"--triggers", "USR2", "--stop-signal", "TERM", "--drain-delay", "0"}, app: app("signals")})
		d.stdout.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
		d.signal(syscall.SIGUSR1)
		d.stdout.AwaitLine(t, waitTimeout, "the app's SIGUSR1", lines.Containing("got app SIGUSR1"))
		d.signal(syscall.SIGUSR2)
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v after the trigger USR2, want exit 0\n%s", got, d.dump())
		}
	})
}

// An ignored trigger does not start the stop sequence (README, "Ignored signals are inherited"):
// started with INT ignored, drainit neither drains nor passes on a SIGINT, and TERM, the other
// trigger, still stops the app.
func TestIgnoredTriggerStartsNothing(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		launcher := []string{"sh", "-c", `trap "" INT; exec "$@"`, "sh"}
		d := start(t, spec{mode: m, launcher: launcher, args: []string{"--drain-delay", "0"}, app: app("signals")})
		d.stdout.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
		d.signal(syscall.SIGINT)
		// Signals are handled in the order they come: once the app has the USR1 sent after it,
		// a SIGINT taken as a trigger would have been logged.
		d.signal(syscall.SIGUSR1)
		d.stdout.AwaitLine(t, waitTimeout, "the app's SIGUSR1", lines.Containing("got app SIGUSR1"))
		if n := d.stderr.Count(func(s string) bool { return strings.Contains(s, "stop sequence started") }); n != 0 {
			t.Fatalf("a SIGINT ignored at start started the stop sequence\n%s", d.dump())
		}
		d.signal(syscall.SIGTERM)
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v after SIGTERM, want exit 0\n%s", got, d.dump())
		}
		if n := d.stdout.Count(func(s string) bool { return strings.Contains(s, "got app SIGINT") }); n != 0 {
			t.Errorf("the app got the SIGINT ignored at drainit's start\n%s", d.dump())
		}
	})
}

// A --stop-signal that was ignored when drainit started stays ignored for the app, which will
// only be killed at the kill point: drainit warns, once (README, "Ignored signals are inherited").
func TestIgnoredStopSignalWarns(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		launcher := []string{"sh", "-c", `trap "" QUIT; exec "$@"`, "sh"}
		_, d := appIgnored(t, spec{mode: m, launcher: launcher, args: []string{"--stop-signal", "QUIT"}})
		if n := d.stderr.Count(func(s string) bool { return strings.Contains(s, "the stop signal was ignored") }); n != 1 {
			t.Errorf("%d warnings that the stop signal was ignored, want 1\n%s", n, d.dump())
		}
		_, d = appIgnored(t, spec{mode: m, launcher: launcher})
		if n := d.stderr.Count(func(s string) bool { return strings.Contains(s, "the stop signal was ignored") }); n != 0 {
			t.Errorf("a warning about the stop signal, with QUIT no stop signal\n%s", d.dump())
		}
	})
}

// inheritedIgnored and inheritedBlocked are what TestAppStartsWithInheritedSignals starts
// drainit with: signals the Go runtime hides (USR2, SEGV, TERM), ones it leaves visible (INT,
// TTOU, TTIN), ones drainit registers only once the app runs (40, 45: RTMIN+6, RTMIN+11).
var (
	inheritedIgnored = []syscall.Signal{syscall.SIGINT, syscall.SIGSEGV, syscall.SIGUSR2, syscall.SIGTTOU, 40}
	inheritedBlocked = []syscall.Signal{syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGTTIN, 45}
)

// notInherited is the documented exception (README, "Ignored signals are inherited"): SEGV
// ignored, whose handler the Go runtime keeps and resets to the default in the child. (TERM
// blocked was one too, until drainit's entry point read the mask before the runtime unblocks it.)
var notInherited = struct{ ignored, blocked uint64 }{1 << (syscall.SIGSEGV - 1), 0}

// sigMasks reads the SigIgn and SigBlk lines of a /proc/PID/status text.
func sigMasks(t *testing.T, status string) (ign, blk uint64) {
	t.Helper()
	return parseMask(t, statusLine(status, "SigIgn:"), "SigIgn:"), parseMask(t, statusLine(status, "SigBlk:"), "SigBlk:")
}

// The app starts with the dispositions and the mask drainit started with, as exec gives them
// (and tini): nothing of drainit's own, such as the 32 and 34 it must not die of (it used to
// ignore them, and the app inherited them ignored), and the mask kept, not emptied. What
// drainit started with is what the same launcher gives cat without drainit; the app is cat,
// which changes neither.
func TestAppStartsWithInheritedSignals(t *testing.T) {
	s := spec{ignore: inheritedIgnored, block: inheritedBlocked, app: []string{"cat", "/proc/self/status"}}
	direct := sigconf(s)
	out, err := exec.Command(direct[0], append(direct[1:], s.app...)...).Output()
	if err != nil {
		t.Fatalf("the launcher without drainit: %v", err)
	}
	wantIgn, wantBlk := sigMasks(t, string(out))
	wantIgn &^= notInherited.ignored
	wantBlk &^= notInherited.blocked
	eachMode(t, func(t *testing.T, m mode) {
		s.mode = m
		d := start(t, s)
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
		}
		ign, blk := sigMasks(t, strings.Join(d.stdout.Texts(), "\n"))
		if ign != wantIgn {
			t.Errorf("the app's SigIgn %016x, want %016x, what drainit started with (but SEGV)", ign, wantIgn)
		}
		if blk != wantBlk {
			t.Errorf("the app's SigBlk %016x, want %016x, what drainit started with", blk, wantBlk)
		}
	})
}

// The exec hooks, unlike the app, start with no signal blocked: drainit stops a hook with
// SIGTERM at its deadline. drainit logs which signals the app starts with blocked, and warns
// when one of them is its stop signal (the app would get it only if it unblocked it itself:
// sleep does not, a shell does), and not otherwise.
func TestBlockedSignalsStayBlockedForApp(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		for _, stop := range []string{"USR1", "USR2"} {
			d := start(t, spec{mode: m, block: []syscall.Signal{syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGPIPE, syscall.SIGWINCH},
				args: []string{"--stop-signal", stop, "--post-stop-exec", `["grep","^SigBlk:","/proc/self/status"]`},
				app:  []string{"true"}})
			if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
				t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
			}
			var hook string
			var logged []string
			warned := 0
			for _, e := range d.logs() {
				switch {
				case e.str("hook") != "" && strings.HasPrefix(e.msg(), "SigBlk:"):
					hook = e.msg()
				case e.msg() == "signals blocked when drainit started stay blocked for the app (not for the exec hooks)":
					logged = e.strs("signals")
				case strings.HasPrefix(e.msg(), "a stop signal was blocked when drainit started"):
					warned++
				}
			}
			if hook == "" {
				t.Errorf("the post-stop hook logged no SigBlk line\n%s", d.dump())
			} else if mask := parseMask(t, hook, "SigBlk:"); mask != 0 {
				t.Errorf("the post-stop hook started with signals blocked (SigBlk %016x), want none", mask)
			}
			if want := []string{"SIGUSR1", "SIGPIPE", "SIGTERM", "SIGWINCH"}; !slices.Equal(logged, want) {
				t.Errorf("drainit logged %q as blocked for the app, want %q\n%s", logged, want, d.dump())
			}
			if want := map[string]int{"USR1": 1, "USR2": 0}[stop]; warned != want {
				t.Errorf("--stop-signal %s: %d warnings that the stop signal is blocked, want %d\n%s", stop, warned, want, d.dump())
			}
		}
	})
}

// statusLine is the line of a /proc/PID/status file that starts with field, "" if none.
func statusLine(status, field string) string {
	for l := range strings.Lines(status) {
		if strings.HasPrefix(l, field) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// The runner's ignored signals reach no child this process starts itself (catchIgnored), not
// only the runs of start(): under `nohup go test` a child used to start with HUP ignored.
func TestRunnerIgnoresNotInherited(t *testing.T) {
	out, err := exec.Command("cat", "/proc/self/status").Output()
	if err != nil {
		t.Fatal(err)
	}
	ign, _ := sigMasks(t, string(out))
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGCONT} {
		if ignored(ign, sig) {
			t.Errorf("a child of the test process starts with %v ignored (SigIgn %016x)", sig, ign)
		}
	}
}
