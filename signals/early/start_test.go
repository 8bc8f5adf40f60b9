//go:build linux

package early

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/signals"
)

// childEnv names the part a re-executed test binary plays (see TestMain): a signal that is not
// registered ends or stops the process that gets it, so what is tested runs in a child.
const childEnv = "DRAINIT_EARLY_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "ending":
		os.Exit(report(childEnding()))
	case "take":
		os.Exit(report(childTake()))
	default:
		os.Exit(report(fmt.Errorf("unknown child %q", os.Getenv(childEnv))))
	}
}

func report(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

// childEnding is, first thing in main, TERM, INT, HUP and QUIT sent to itself: the package's
// initialisation must have registered them before it returned, not merely started to.
func childEnding() error {
	for _, s := range ending {
		if err := unix.Kill(os.Getpid(), s.(unix.Signal)); err != nil {
			return err
		}
	}
	r := Take()
	// One ignored when the test started (INT and QUIT in a shell's background job) stays so.
	return receive(r.Sigs, slices.DeleteFunc(slices.Clone(ending), func(s os.Signal) bool {
		return slices.Contains(r.Ignored, s.(unix.Signal))
	}))
}

// childTake sends itself every early signal and CHLD once Wait has returned, then a trigger
// given to Register; HUP is ignored (the parent starts it so) and must stay so.
func childTake() error {
	r := Take()
	r.Wait()
	if !slices.Contains(r.Ignored, unix.SIGHUP) {
		return fmt.Errorf("HUP ignored at start, but not in Ignored %v", r.Ignored)
	}
	// CONT on its own, after the others: the kernel discards a pending CONT when a stop signal
	// (TSTP, TTIN, TTOU) is sent, and the other way round.
	var early []os.Signal
	for _, s := range signals.Early() {
		if s != unix.SIGCONT && !slices.Contains(r.Ignored, s.(unix.Signal)) {
			early = append(early, s)
		}
	}
	for _, batch := range [][]os.Signal{early, {unix.SIGCONT}} {
		for _, s := range batch {
			if err := unix.Kill(os.Getpid(), s.(unix.Signal)); err != nil {
				return err
			}
		}
		if err := receive(r.Sigs, batch); err != nil {
			return err
		}
	}
	if err := unix.Kill(os.Getpid(), unix.SIGCHLD); err != nil {
		return err
	}
	if err := receive(r.Chld, []os.Signal{unix.SIGCHLD}); err != nil {
		return fmt.Errorf("on Chld: %w", err)
	}
	r.Register([]unix.Signal{unix.SIGPWR, unix.SIGHUP})
	if !signal.Ignored(unix.SIGHUP) {
		return fmt.Errorf("HUP, ignored at start, is no longer ignored after Register")
	}
	if err := unix.Kill(os.Getpid(), unix.SIGPWR); err != nil {
		return err
	}
	return receive(r.Sigs, []os.Signal{unix.SIGPWR})
}

// receive waits for every signal of want on c, in any order, for at most 5 s.
func receive(c <-chan os.Signal, want []os.Signal) error {
	left := slices.Clone(want)
	deadline := time.After(5 * time.Second)
	for len(left) > 0 {
		select {
		case s := <-c:
			left = slices.DeleteFunc(left, func(w os.Signal) bool { return w == s })
		case <-deadline:
			return fmt.Errorf("never received %v", left)
		}
	}
	return nil
}

// runChild runs this test binary as the child named and fails unless it ends well: a signal it did not register ends it (TERM, STKFLT) or stops it (TSTP),
// which the timeout ends.
func runChild(t *testing.T, child string, ignoreHUP bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	if ignoreHUP {
		// Through a shell, so that this process's own disposition stays as it is: os/signal
		// cannot undo an Ignore (signal.Ignored stays true after a Reset).
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", `trap "" HUP; exec "$0" "$@"`, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), childEnv+"="+child)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("child %s: %v (%v)\n%s", child, err, cmd.ProcessState, out)
	}
}

// TERM, INT, HUP and QUIT are registered while the package initialises, as they were before the
// rest moved to a goroutine of its own: the window in which one of them ends drainit is no
// longer than it was. A child sends them to itself as soon as main runs; registered from the
// goroutine instead, which starts 100–200 µs later, the first one ends the child (measured:
// every run).
func TestEndingSignalsRegisteredDuringInit(t *testing.T) {
	for range 20 {
		runChild(t, "ending", false)
	}
}

// Once Wait has returned, every early signal and CHLD is registered (what the goroutine does
// meanwhile is done), and Register adds the triggers that are not early but leaves an ignored
// signal ignored. HUP is ignored when the child starts (exec keeps SIG_IGN), as under nohup.
func TestWaitForEveryEarlySignal(t *testing.T) {
	runChild(t, "take", true)
}
