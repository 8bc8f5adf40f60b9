package early

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The helper process the tests re-execute. "default" and "discard" send the process itself
// signals 32 and 34, after DiscardUncatchable for "discard", and say whether it survived;
// "child" runs DiscardUncatchable and prints a child's SigIgn (started as drainit starts the
// app: the Go runtime's fork, then exec).
//
// With SIGNALS_TEST_IGNORE (signal numbers, comma-separated; it may be empty) it first sets 32
// and 34 to their default and those listed to SIG_IGN, and execs itself without it, so that the
// helper starts with exactly them ignored: a shell cannot ignore 32 (dash's trap leaves it
// alone), and make ignores it for its commands.
func init() {
	mode := os.Getenv("SIGNALS_TEST_HELPER")
	if mode == "" {
		return
	}
	if list, ok := os.LookupEnv("SIGNALS_TEST_IGNORE"); ok {
		// 32 and 34 at their default first, whatever the test was started with: GNU make 4.3
		// starts its commands with 32 and 33 ignored.
		for _, sig := range []syscall.Signal{32, 34} {
			if _, err := sigaction(sig, &kernelSigaction{}); err != nil {
				fmt.Println(err)
				os.Exit(3)
			}
		}
		for n := range strings.SplitSeq(list, ",") {
			if n == "" {
				continue
			}
			sig, _ := strconv.Atoi(n)
			if _, err := sigaction(syscall.Signal(sig), &kernelSigaction{handler: sigIgn}); err != nil {
				fmt.Println(err)
				os.Exit(3)
			}
		}
		_ = os.Unsetenv("SIGNALS_TEST_IGNORE")
		fmt.Println(syscall.Exec(os.Args[0], os.Args, os.Environ()))
		os.Exit(3)
	}
	if mode != "child" {
		// This package's initialisation has discarded them already: at their default first.
		for _, sig := range []syscall.Signal{32, 34} {
			if _, err := sigaction(sig, &kernelSigaction{}); err != nil {
				fmt.Println(err)
				os.Exit(3)
			}
		}
	}
	if mode != "default" {
		if err := DiscardUncatchable(); err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
	}
	if mode == "child" {
		printChildSigIgn()
	}
	// A fatal signal at its default action ends the whole process as it is sent (the kernel
	// turns it into a group exit at once); a discarded one returns from its handler.
	for range 100 {
		for _, sig := range []syscall.Signal{32, 34} {
			_ = syscall.Kill(os.Getpid(), sig)
		}
	}
	fmt.Println("alive")
	os.Exit(0)
}

// helper runs the test binary as the helper process in mode, started with the signals in
// ignore (numbers, comma-separated; none when empty) ignored, and returns its output.
func helper(t *testing.T, mode, ignore string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SIGNALS_TEST_HELPER="+mode, "SIGNALS_TEST_IGNORE="+ignore)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// Signals 32 and 34, which Go programs cannot catch, end one at their default action; after
// DiscardUncatchable they do nothing.
func TestDiscardUncatchable(t *testing.T) {
	for _, c := range []struct {
		mode  string
		alive bool
	}{{"default", false}, {"discard", true}} {
		out, err := helper(t, c.mode, "")
		if alive := err == nil && out == "alive"; alive != c.alive {
			t.Errorf("%s: alive=%v (%v, %q), want %v", c.mode, alive, err, out, c.alive)
		}
	}
}

// DiscardUncatchable leaves the app 32 and 34 as drainit got them: at their default action
// (SIG_IGN, which exec keeps, gave a glibc app its SIGRTMIN ignored), or ignored when they were
// ignored at start.
func TestDiscardUncatchableLeavesChildAsInherited(t *testing.T) {
	for _, c := range []struct {
		ignore string
		want   uint64 // of 32 and 34 in the child's SigIgn
	}{{"", 0}, {"34", 1 << 33}, {"32,34", 1<<31 | 1<<33}} {
		out, err := helper(t, "child", c.ignore)
		if err != nil {
			t.Fatalf("helper, ignoring %q: %v\n%s", c.ignore, err, out)
		}
		mask := parseSigIgn(t, out)
		if got := mask & (1<<31 | 1<<33); got != c.want {
			t.Errorf("started with %q ignored, the child has SigIgn %016x: of 32 and 34 %016x ignored, want %016x", c.ignore, mask, got, c.want)
		}
	}
}
