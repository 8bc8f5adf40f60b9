//go:build linux

package startsig

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
)

// qemu names the qemu-user emulator of each architecture the entry point is written for.
var qemu = map[string]string{
	"amd64": "qemu-x86_64-static", "arm64": "qemu-aarch64-static", "arm": "qemu-arm-static",
	"ppc64le": "qemu-ppc64le-static", "s390x": "qemu-s390x-static", "riscv64": "qemu-riscv64-static",
}

// ignoredByShell are the signals the tests start the probe with ignored: ones the Go runtime
// hides from a Go program (it installs its own handler before any Go code runs). qemu-user
// keeps an ignored disposition for its guest, but renumbers the real-time signals: none here.
var ignoredByShell = []syscall.Signal{syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGPIPE, syscall.SIGTERM}

// The entry point, on every architecture it is written for, sees the signals the process
// started with ignored, and nothing else, and leaves the arguments and the environment where
// the runtime finds them; built with -tags noentrypoint it does not run, and says so. Each
// architecture but the machine's own runs under qemu-user (Debian's qemu-user-static): without
// it that subtest skips, or fails under CI=true.
func TestEntryPoint(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string, runner []string, probe string) {
		build(t, arch, probe, true)
		run := func(ignoring bool) string {
			t.Helper()
			script := `exec "$@"`
			if ignoring {
				script = `trap "" QUIT USR1 PIPE TERM; ` + script
			}
			args := append(append([]string{"-c", script, "sh"}, runner...), probe, "one", "two words")
			cmd := exec.Command("sh", args...)
			cmd.Env = append(os.Environ(), "STARTSIG_PROBE=env value")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", probe, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		var mask uint64
		for _, s := range ignoredByShell {
			mask |= 1 << (s - 1)
		}
		// What the test process passes on ignored anyway (a signal the Go runtime leaves
		// alone, such as 32, ignored by whatever started the tests) is the baseline; only the
		// standard signals 1–31 are compared, since qemu-user renumbers the real-time ones.
		base := inherited(t)
		const std = 1<<31 - 1
		const rest = ` args=["one" "two words"] env="env value"`
		check := func(what string, ignoring bool, wantRan bool, wantMask uint64) {
			t.Helper()
			out := run(ignoring)
			var ran bool
			var got uint64
			head, tail, _ := strings.Cut(out, " args=")
			if _, err := fmt.Sscanf(head, "ran=%t ignored=%x", &ran, &got); err != nil || " args="+tail != rest {
				t.Errorf("%s: the probe printed %q (%v), want ran=… ignored=…%s", what, out, err, rest)
				return
			}
			if ran != wantRan || got&std != wantMask&std {
				t.Errorf("%s:\n got ran=%t ignored=%016x\nwant ran=%t ignored=%016x (signals 1-31)", what, ran, got&std, wantRan, wantMask&std)
			}
		}
		check(fmt.Sprintf("started with %v ignored", ignoredByShell), true, true, base|mask)
		check("started with nothing more ignored", false, true, base)
		build(t, arch, probe, false)
		check("built with -tags noentrypoint", true, false, 0)
	})
}

// eachArch runs f for each architecture the entry point is written for, in a subtest, with the
// path for its probe and the argv prefix that runs it: none for the machine's own, qemu-user
// (Debian's qemu-user-static) for the others, whose subtests skip without it (fail under
// CI=true).
func eachArch(t *testing.T, f func(t *testing.T, arch string, runner []string, probe string)) {
	dir := t.TempDir()
	for _, arch := range []string{"amd64", "arm64", "arm", "ppc64le", "s390x", "riscv64"} {
		t.Run(arch, func(t *testing.T) {
			var runner []string
			if arch != runtime.GOARCH {
				q, err := testenv.LookPath(qemu[arch])
				if err != nil {
					testenv.SkipUnlessCI(t, fmt.Sprintf("no %s to run the %s entry point: %v", qemu[arch], arch, err))
				}
				runner = []string{q}
			}
			f(t, arch, runner, filepath.Join(dir, "probe-"+arch))
		})
	}
}

// inherited is the SigIgn mask a child of the test process starts with, through the same sh.
func inherited(t *testing.T) uint64 {
	t.Helper()
	out, err := exec.Command("sh", "-c", `exec "$@"`, "sh", "grep", "SigIgn", "/proc/self/status").Output()
	if err != nil {
		t.Fatalf("reading a child's SigIgn: %v", err)
	}
	var mask uint64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "SigIgn: %x", &mask); err != nil {
		t.Fatalf("reading a child's SigIgn from %q: %v", out, err)
	}
	return mask
}

// build builds the probe for arch into out, statically, as `go build` does (entry) or with
// -tags noentrypoint.
func build(t *testing.T, arch, out string, entry bool) {
	t.Helper()
	tags := ""
	if !entry {
		tags = "noentrypoint"
	}
	cmd := exec.Command("go", "build", "-tags="+tags, "-o", out, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOARM=7")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", arch, err, b)
	}
}

// The entry point holds the start on one CPU, and Unpin gives every thread back the affinity
// the process started with, on every architecture the entry point is written for, whatever
// set it started with; built with -tags noentrypoint nothing is pinned. Each architecture but the
// machine's own runs under qemu-user, as in TestEntryPoint. (Only the CPUs of this machine are
// run on; TestPinMaskForHighCPUs checks the mask for high ones.)
func TestStartPinned(t *testing.T) {
	taskset, err := testenv.LookPath("taskset")
	if err != nil {
		testenv.SkipUnlessCI(t, "no taskset (util-linux) to start the probe on chosen CPUs: "+err.Error())
	}
	given := childAllowed(t)
	cpus := cpuList(t, given)
	last := strconv.Itoa(cpus[len(cpus)-1])
	eachArch(t, func(t *testing.T, arch string, runner []string, probe string) {
		run := func(cpus string) (numcpu, procs int, start, unpin, after string) {
			t.Helper()
			return runProbe(t, taskset, cpus, runner, probe)
		}
		build(t, arch, probe, true)
		for _, set := range []string{given, last} {
			numcpu, procs, start, unpin, after := run(set)
			in := cpuList(t, start)
			if numcpu != 1 || procs != 1 || len(in) != 1 || !slices.Contains(cpuList(t, set), in[0]) {
				t.Errorf("started on CPUs %s: the runtime counted %d CPUs, GOMAXPROCS %d, on CPUs %s; want 1, 1, one of %s",
					set, numcpu, procs, start, set)
			}
			if unpin != "<nil>" || after != set {
				t.Errorf("started on CPUs %s: after Unpin (error %s) the threads are on CPUs %s, want all on %s", set, unpin, after, set)
			}
		}
		build(t, arch, probe, false)
		if numcpu, _, start, unpin, after := run(given); numcpu != len(cpus) || start != given || unpin != "<nil>" || after != given {
			t.Errorf("built with -tags noentrypoint, started on CPUs %s: the runtime counted %d CPUs, on CPUs %s, after Unpin (%s) %s; want %d, all on %s",
				given, numcpu, start, unpin, after, len(cpus), given)
		}
	})
}

// runProbe runs probe (through runner) on cpus with STARTSIG_PIN set and reads what it printed.
func runProbe(t *testing.T, taskset, cpus string, runner []string, probe string) (numcpu, procs int, start, unpin, after string) {
	t.Helper()
	args := append(append([]string{"-c", cpus}, runner...), probe)
	cmd := exec.Command(taskset, args...)
	cmd.Env = append(os.Environ(), "STARTSIG_PIN=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "numcpu=%d gomaxprocs=%d start=%s unpin=%s after=%s",
		&numcpu, &procs, &start, &unpin, &after); err != nil {
		t.Fatalf("the probe printed %q: %v", out, err)
	}
	return numcpu, procs, start, unpin, after
}

// Where /proc is another pid namespace's (unshare --pid without a /proc of its own), the thread
// IDs Unpin could list there are not the process's own: it must not take them for its own, and
// still set every thread.
func TestUnpinWithAnotherNamespacesProc(t *testing.T) {
	taskset, err := testenv.LookPath("taskset")
	if err != nil {
		testenv.SkipUnlessCI(t, "no taskset (util-linux) to start the probe on chosen CPUs: "+err.Error())
	}
	unshare, err := testenv.LookPath("unshare")
	if err != nil || os.Geteuid() != 0 {
		testenv.SkipUnlessCI(t, "needs root and unshare (util-linux) for a pid namespace")
	}
	given := childAllowed(t)
	if len(cpuList(t, given)) < 2 {
		testenv.SkipUnlessCI(t, "one CPU allowed ("+given+"): the pin changes nothing, nor Unpin")
	}
	// The test's /proc is then another namespace's: the probe is PID 1 in its own, and
	// /proc/self names it by its PID in the test's.
	out, err := exec.Command(unshare, "--pid", "--fork", "sh", "-c", `echo $$ $(readlink /proc/self)`).Output()
	if f := strings.Fields(string(out)); err != nil || len(f) != 2 || f[0] != "1" || f[1] == "1" {
		t.Fatalf("unshare --pid --fork sh: %v, printed %q; want its PID 1 and /proc/self another", err, out)
	}
	probe := filepath.Join(t.TempDir(), "probe")
	build(t, runtime.GOARCH, probe, true)
	_, _, start, unpin, after := runProbe(t, taskset, given, []string{unshare, "--pid", "--fork"}, probe)
	if start == given || unpin != "<nil>" || after != given {
		t.Errorf("started pinned to %s: after Unpin (error %s) the threads are on CPUs %s, want all on %s", start, unpin, after, given)
	}
}

// childAllowed is the Cpus_allowed_list a child of the test process starts with.
func childAllowed(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `exec "$@"`, "sh", "grep", "Cpus_allowed_list", "/proc/self/status").Output()
	if err != nil {
		t.Fatalf("reading a child's Cpus_allowed_list: %v", err)
	}
	_, list, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
	return strings.TrimSpace(list)
}

// cpuList reads a CPU list as /proc prints one: "0-3,6,8-9".
func cpuList(t *testing.T, s string) []int {
	t.Helper()
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			t.Fatalf("CPU list %q: cannot read %q", s, part)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// A SIGTERM as the program starts, on every architecture the entry point is written for: before
// the runtime's handlers, the entry point's catch takes it (Caught returns it); from there until
// it is registered, catch writes the refusal and exits 143; once Caught has disarmed it, the
// runtime's default follows (death by the signal). The first is a race, a sweep of delays after
// the start, run until catch has taken one; no run may end but in one of the three ways, or
// before the entry point's first instruction (killed, with nothing written).
// Each architecture but the machine's own runs under qemu-user, as in TestEntryPoint.
func TestStopSignalAtStart(t *testing.T) {
	eachArch(t, func(t *testing.T, arch string, runner []string, probe string) {
		build(t, arch, probe, true)
		start := func(mode string) (*exec.Cmd, *strings.Builder, *strings.Builder) {
			t.Helper()
			args := append(append([]string{}, runner...), probe)
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = append(os.Environ(), "STARTSIG_TERM="+mode)
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			return cmd, &out, &errOut
		}
		const refusal = "drainit: SIGTERM came as drainit started, before it could handle it: exiting 143, the app not started\n"
		refused := func(err error, stderr string) bool {
			var exit *exec.ExitError
			return errors.As(err, &exit) && exit.ExitCode() == 143 && stderr == refusal
		}
		killed := func(err error) bool {
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				return false
			}
			ws, ok := exit.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM
		}

		cmd, out, errOut := start("init")
		if err := cmd.Wait(); !refused(err, errOut.String()) || out.Len() > 0 {
			t.Errorf("SIGTERM during the packages' initialisation: %v, stdout %q, stderr %q; want exit 143 with the refusal", err, out, errOut)
		}
		cmd, out, errOut = start("after")
		if err := cmd.Wait(); !killed(err) || out.String() != "caught=[]\n" {
			t.Errorf("SIGTERM once disarmed: %v, stdout %q, stderr %q; want death by SIGTERM after caught=[]", err, out, errOut)
		}

		// qemu-user takes milliseconds to translate the runtime's start: larger steps.
		step := 20 * time.Microsecond
		if len(runner) > 0 {
			step = 250 * time.Microsecond
		}
		seen := map[string]int{}
		for i := 0; i < 400 && seen["caught"] == 0; i++ {
			delay := time.Duration(i%100) * step
			cmd, out, errOut := start("race")
			began := time.Now()
			for time.Since(began) < delay {
				// A spin: a timer's slack is larger than the steps.
			}
			_ = cmd.Process.Signal(syscall.SIGTERM)
			err := cmd.Wait()
			switch o := out.String(); {
			case err == nil && o == "caught=[terminated] got=terminated\n":
				seen["caught"]++ // taken by catch, sent again once registered
			case err == nil && o == "caught=[] got=terminated\n":
				seen["registered"]++
			case refused(err, errOut.String()) && o == "":
				seen["refused"]++
			case killed(err) && o == "" && errOut.Len() == 0:
				// Before the entry point's first instruction: the kernel's time, or qemu's.
				seen["before"]++
			default:
				t.Fatalf("SIGTERM %v after the start: %v, stdout %q, stderr %q", delay, err, o, errOut)
			}
		}
		t.Logf("%v", seen)
		if seen["caught"] == 0 {
			t.Errorf("in 400 starts, SIGTERM never caught before the runtime's handlers: %v", seen)
		}
	})
}

// The entry point reads the signal mask the process started with, TERM and HUP among it, which
// the Go runtime unblocks before any Go code runs, on every architecture it is written for
// (qemu-user keeps the mask for its guest, as it renumbers the real-time signals: the standard
// ones only are compared). Built with -tags noentrypoint Mask says it does not know.
func TestEntryPointMask(t *testing.T) {
	blocked := []syscall.Signal{syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGTERM, syscall.SIGWINCH}
	var want uint64
	for _, s := range blocked {
		want |= 1 << (s - 1)
	}
	eachArch(t, func(t *testing.T, arch string, runner []string, probe string) {
		run := func() string {
			t.Helper()
			args := append(append([]string{}, runner...), probe)
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Env = append(os.Environ(), "STARTSIG_MASK=1")
			// The child gets the mask of the thread that starts it.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var set, old unix.Sigset_t
			for _, s := range blocked {
				set.Val[(s-1)/64] |= 1 << ((s - 1) % 64)
			}
			if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old); err != nil {
				t.Fatal(err)
			}
			defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", probe, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		build(t, arch, probe, true)
		var ran bool
		var got uint64
		if out := run(); func() bool { _, err := fmt.Sscanf(out, "ran=%t mask=%x", &ran, &got); return err != nil }() {
			t.Fatalf("the probe printed %q", out)
		}
		const std = 1<<31 - 1
		if !ran || got&std != want {
			t.Errorf("started with %v blocked: ran=%t mask=%016x, want ran=true mask=%016x (signals 1-31)", blocked, ran, got&std, want)
		}
		build(t, arch, probe, false)
		if out := run(); out != "ran=false mask=0000000000000000" {
			t.Errorf("built with -tags noentrypoint: the probe printed %q, want ran=false", out)
		}
	})
}
