package integration

import (
	"os/exec"
	"syscall"
	"testing"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/internal/proc"
)

// TestJobStopWithoutTerminal: drainit is a job-control shell's foreground job, but the app does
// not get the terminal (drainit's stdin is not it: `drainit -- app < /dev/null`). Ctrl-Z then
// reaches drainit's group, not the app's: drainit passes SIGTSTP on and stops itself too, as
// dumb-init does, so that the shell sees its job stopped and takes the terminal back. Continued
// (what `fg` does), drainit passes SIGCONT on to the app.
func TestJobStopWithoutTerminal(t *testing.T) {
	requireRoot(t) // the harness's pty helpers set the controlling terminal
	master, tty, sh := startOnTerminal(t, exec.Command("sh", "-mc",
		`"$0" --drain-delay 0 --log-format json -- "$1" signals < /dev/null; echo "job status $?"; read line`,
		drainitBin, testappBin))
	app := tty.AwaitPID(t, waitTimeout, "ready app")
	kids := proc.Children("/proc", sh.pid)
	if len(kids) != 1 {
		t.Fatalf("the shell's children: %v, want drainit alone", kids)
	}
	drainit := kids[0]
	if fg := foreground(t, master); fg != drainit {
		t.Fatalf("foreground group %d, want drainit's job (%d)", fg, drainit)
	}

	if _, err := master.Write([]byte{0x1a}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	// The shell goes on past the job once it has stopped: 128 + the stop signal.
	tty.AwaitLine(t, waitTimeout, "the shell seeing its job stopped", lines.Containing("job status 14"))
	// The app stops as its SIGTSTP arrives, which need not be before the shell's echo.
	waitUntil(t, waitTimeout, "drainit and the app stopped (state T) after Ctrl-Z", func() bool {
		return procState(drainit) == 'T' && procState(app) == 'T'
	})

	if err := syscall.Kill(-drainit, syscall.SIGCONT); err != nil { // as the shell's fg or bg does
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGCONT", lines.Containing("got app SIGCONT"))
	if err := syscall.Kill(drainit, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGTERM", lines.Containing("got app SIGTERM"))
	if _, err := master.Write([]byte("\n")); err != nil { // ends the shell's read
		t.Fatal(err)
	}
	if got := sh.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("the shell: %v, want exit 0\n%s", got, sh.dump())
	}
}
