package integration

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
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

// TestJobStopOrphanedGroup: started by anything but a job-control shell (here setsid, a session
// of its own, as a process manager starts it), drainit's process group is orphaned: nothing
// would continue it once stopped, and the kernel discards a job-control stop sent to such a
// group. A SIGTSTP (an app's `kill -TSTP $PPID`) is then passed on, and stops neither drainit nor
// the app: a SIGTERM after it still stops the app.
func TestJobStopOrphanedGroup(t *testing.T) {
	setsid, err := testenv.LookPath("setsid")
	if err != nil {
		testenv.SkipUnlessCI(t, "no setsid (util-linux) to start drainit in a session of its own: "+err.Error())
	}
	d := start(t, spec{mode: subreaper, launcher: []string{setsid}, args: []string{"--drain-delay", "0", "--log-level", "debug"}, app: app("signals")})
	d.stdout.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
	d.signal(syscall.SIGTSTP)
	// The app records no TSTP (testapp's signals mode leaves the job-control stops out).
	d.stderr.AwaitLine(t, waitTimeout, "SIGTSTP passed on", func(l string) bool {
		return strings.Contains(l, `"signal":"SIGTSTP"`) && strings.Contains(l, "forwarding signal to the app")
	})
	d.signal(syscall.SIGTERM)
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v after SIGTSTP then SIGTERM, want exit 0 (drainit stopped itself, with nothing above to continue it?)\n%s", got, d.dump())
	}
}
