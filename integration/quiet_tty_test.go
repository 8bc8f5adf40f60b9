package integration

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/integration/lines"
)

// On a terminal (`docker run -it image bash`) drainit's log shares the screen with the app. With
// no --log-level, a run in which nothing goes wrong and no stop sequence runs prints nothing of
// drainit's; warnings, errors and a stop sequence's timeline still show; a level the user chose
// shows as asked.
func TestTerminalQuiet(t *testing.T) {
	t.Run("app exits 0: nothing of drainit's", func(t *testing.T) {
		_, tty, d := startOnTerminal(t, exec.Command(drainitBin, "--", testappBin, "exit", "0"))
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
		}
		// wait has seen the terminal closed everywhere: this is all it ever showed.
		if out := tty.Texts(); len(out) != 0 {
			t.Fatalf("the terminal shows drainit's lines in a run where nothing went wrong:\n%s", tty.Tail(20))
		}
	})

	t.Run("a stop sequence shows its timeline", func(t *testing.T) {
		_, tty, d := startOnTerminal(t, exec.Command(drainitBin, "--drain-delay", "0", "--", testappBin, "signals"))
		tty.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
		d.signal(syscall.SIGTERM)
		tty.AwaitLine(t, waitTimeout, "drainit's \"stop sequence started\"", lines.Containing("stop sequence started"))
		tty.AwaitLine(t, waitTimeout, "the app's SIGTERM", lines.Containing("got app SIGTERM"))
		exiting := tty.AwaitLine(t, waitTimeout, "drainit's \"drainit exiting\" with its summary", lines.Containing("drainit exiting")).Text
		if !strings.Contains(exiting, "summary=") {
			t.Errorf("the last line has no summary: %s", exiting)
		}
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
		}
		// What came before the trigger was a run where nothing went wrong.
		if n := tty.Count(func(s string) bool { return strings.Contains(s, "app started") }); n != 0 {
			t.Errorf("the terminal shows \"app started\" from before the stop sequence:\n%s", tty.Tail(20))
		}
	})

	t.Run("an error shows", func(t *testing.T) {
		_, tty, d := startOnTerminal(t, exec.Command(drainitBin, "--", "/nonexistent/app"))
		tty.AwaitLine(t, waitTimeout, "drainit's \"app not started\"", lines.Containing("app not started"))
		if got := d.wait(waitTimeout); got.code == 0 {
			t.Fatalf("drainit: %v, want a failure\n%s", got, d.dump())
		}
	})

	t.Run("--log-level info shows the info lines", func(t *testing.T) {
		_, tty, d := startOnTerminal(t, exec.Command(drainitBin, "--log-level", "info", "--", testappBin, "exit", "0"))
		tty.AwaitLine(t, waitTimeout, "drainit's \"app started\"", lines.Containing("app started"))
		tty.AwaitLine(t, waitTimeout, "drainit's \"drainit exiting\"", lines.Containing("drainit exiting"))
		if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
			t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
		}
	})
}
