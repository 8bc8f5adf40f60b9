package integration

import (
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/integration/lines"
)

// ignoring is a launcher that ignores HUP and TSTP and execs the rest of its arguments, as
// `nohup`, or `trap "" HUP TSTP; exec drainit …` in an entrypoint script, do.
var ignoring = []string{"sh", "-c", `trap "" HUP TSTP; exec "$@"`, "sh"}

// appIgnored runs drainit with grep as the app, which reports its own ignored signals
// (/proc/self/status, SigIgn), and returns that set as a bit mask (bit N-1 for signal N).
func appIgnored(t *testing.T, m mode, launcher []string) uint64 {
	t.Helper()
	d := start(t, spec{mode: m, launcher: launcher, app: []string{"grep", "^SigIgn:", "/proc/self/status"}})
	line := d.stdout.AwaitLine(t, waitTimeout, "the app's SigIgn line", lines.Containing("SigIgn:")).Text
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
	mask, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(line, "SigIgn:")), 16, 64)
	if err != nil {
		t.Fatalf("reading %q: %v", line, err)
	}
	return mask
}

func ignored(mask uint64, sig syscall.Signal) bool { return mask&(1<<(uint(sig)-1)) != 0 }

// What was ignored when drainit started stays ignored for the app, as exec keeps it (and tini
// does): HUP under nohup, TSTP under a launcher that ignores it. Without the launcher the app
// starts with them at their default. (TERM, QUIT, PIPE and the rest cannot be kept: the Go
// runtime hides an inherited SIG_IGN of them from drainit; see signals.InheritedIgnored.)
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	eachMode(t, func(t *testing.T, m mode) {
		mask := appIgnored(t, m, ignoring)
		for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTSTP} {
			if !ignored(mask, sig) {
				t.Errorf("drainit started with %v ignored, the app has it not ignored (SigIgn %016x)", sig, mask)
			}
		}
		mask = appIgnored(t, m, nil)
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
