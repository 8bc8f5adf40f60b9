package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/lines"
	"github.com/drainit/drainit/integration/testenv"
	"github.com/drainit/drainit/internal/proc"
)

// openPTY opens a new pseudo-terminal pair. The master stays in non-blocking mode (ioctls go
// through SyscallConn, not Fd), so closing it ends a pending Read.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.SkipUnlessCI(t, fmt.Sprintf("no pseudo-terminal: %v", err))
	}
	var n int
	err = control(m, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return fmt.Errorf("unlocking the pty: %w", err)
		}
		var err error
		if n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN); err != nil {
			return fmt.Errorf("naming the pty: %w", err)
		}
		return nil
	})
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatalf("opening the pty's slave: %v", err)
	}
	return m, s
}

// control runs f on f's file descriptor without switching it to blocking mode.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// foreground is the terminal's foreground process group, read on the master side.
func foreground(t *testing.T, master *os.File) int {
	t.Helper()
	var pgrp int
	if err := control(master, func(fd int) (err error) {
		pgrp, err = unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		return err
	}); err != nil {
		t.Fatalf("TIOCGPGRP: %v", err)
	}
	return pgrp
}

// procState is the state letter of pid ('R', 'S', 'T', 'Z', …), 0 once it is gone.
func procState(pid int) byte {
	st, _ := proc.ReadStat("/proc", pid)
	return st.State
}

// startOnTerminal starts cmd in a session of its own with a new pseudo-terminal as its
// controlling terminal and its stdin, stdout and stderr. It returns the terminal's master side
// and what the terminal shows, line by line. The terminal echoes control characters ("^C"),
// which can land at the start of any line, so the tests match lines by what they contain.
func startOnTerminal(t *testing.T, cmd *exec.Cmd) (*os.File, *lines.Log, *drainitRun) {
	t.Helper()
	master, slave := openPTY(t)
	t.Cleanup(func() { master.Close() })
	cmd.Dir = t.TempDir()
	cmd.Env = cleanEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err := cmd.Start()
	slave.Close()
	if err != nil {
		t.Fatalf("starting %s: %v", cmd.Path, err)
	}
	tty := lines.Read("terminal", master)
	return master, tty, watch(t, subreaper, cmd, tty, tty)
}

// TestTerminal runs drainit (not as PID 1) on a terminal as a job-control shell's foreground
// job: the app's group gets the foreground, Ctrl-C reaches the app, Ctrl-Z stops the app and then
// drainit (so that the shell sees its job stopped and takes the terminal back), and the shell's
// fg resumes both with the app in the foreground again.
func TestTerminal(t *testing.T) {
	// sh -m: job control without an interactive shell; the read holds it between the stop and
	// the fg.
	master, tty, sh := startOnTerminal(t, exec.Command("sh", "-mc",
		`"$0" --drain-delay 0 --log-format json --log-level info -- "$1" signals; echo "job status $?"; read line; fg; echo "fg status $?"`,
		drainitBin, testappBin))

	started := tty.AwaitLine(t, waitTimeout, "drainit's \"app started\"", lines.Containing(`"message":"app started"`)).Text
	if !strings.Contains(started, `"tty":true`) {
		t.Fatalf("drainit did not see its terminal: %s", started)
	}
	appPid := tty.AwaitPID(t, waitTimeout, "ready app")
	kids := proc.Children("/proc", sh.pid)
	if len(kids) != 1 {
		t.Fatalf("the shell's children: %v, want drainit alone", kids)
	}
	drainit := kids[0]
	if fg := foreground(t, master); fg != appPid {
		t.Fatalf("foreground group %d, want the app's (%d)", fg, appPid)
	}

	if _, err := master.Write([]byte{0x03}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGINT from Ctrl-C", lines.Containing("got app SIGINT"))

	if _, err := master.Write([]byte{0x1a}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	// The shell goes on past the job once it has stopped: 128 + the stop signal.
	tty.AwaitLine(t, waitTimeout, "the shell seeing its job stopped", lines.Containing("job status 14"))
	waitUntil(t, waitTimeout, "the app and drainit stopped (state T) after Ctrl-Z", func() bool {
		return procState(appPid) == 'T' && procState(drainit) == 'T'
	})
	if fg := foreground(t, master); fg != sh.pid {
		t.Errorf("while the job is stopped, foreground group %d, want the shell's (%d)", fg, sh.pid)
	}

	if _, err := master.Write([]byte("\n")); err != nil { // ends the read: fg
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGCONT", lines.Containing("got app SIGCONT"))
	waitUntil(t, waitTimeout, "the app and drainit running again after fg", func() bool {
		a, s := procState(appPid), procState(drainit)
		return a != 'T' && a != 0 && s != 'T' && s != 0
	})
	if fg := foreground(t, master); fg != appPid {
		t.Errorf("after fg, foreground group %d, want the app's (%d)", fg, appPid)
	}

	if err := syscall.Kill(drainit, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGTERM", lines.Containing("got app SIGTERM"))
	tty.AwaitLine(t, waitTimeout, "drainit's exit status through fg", lines.Containing("fg status 0"))
	if got := sh.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("the shell: %v, want exit 0\n%s", got, sh.dump())
	}
}

// TestTerminalSessionLeader runs drainit on a terminal in a session of its own, as `ssh -t host
// drainit -- app` or setsid does: its process group is orphaned, with no shell to continue it.
// Ctrl-Z stops the app (it has the foreground) but not drainit, which says how to resume it and
// still takes SIGTERM: the stop signal, followed by SIGCONT, ends the stopped app gracefully.
func TestTerminalSessionLeader(t *testing.T) {
	master, tty, d := startOnTerminal(t, exec.Command(drainitBin, "--drain-delay", "0", "--log-format", "json", "--log-level", "info", "--", testappBin, "signals"))
	appPid := tty.AwaitPID(t, waitTimeout, "ready app")
	if fg := foreground(t, master); fg != appPid {
		t.Fatalf("foreground group %d, want the app's (%d)", fg, appPid)
	}
	if _, err := master.Write([]byte{0x1a}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "drainit's warning", lines.Containing("app stopped by job control; send SIGCONT to resume it"))
	if s := procState(d.pid); s == 'T' {
		t.Errorf("drainit stopped itself (state %c) with nothing above to continue it", s)
	}
	d.signal(syscall.SIGTERM)
	tty.AwaitLine(t, waitTimeout, "the app's SIGTERM", lines.Containing("got app SIGTERM"))
	if got := d.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("drainit: %v, want exit 0\n%s", got, d.dump())
	}
}

// TestTerminalInBackground runs drainit as a background job of a job-control shell on a
// terminal (`drainit -- app &`): the terminal stays the shell's. Taking the foreground for the
// app would leave the shell's next read failing, and the shell would exit.
func TestTerminalInBackground(t *testing.T) {
	// sh -m: job control without an interactive shell, so the job gets a process group of its
	// own and the shell keeps the terminal's foreground.
	master, tty, sh := startOnTerminal(t, exec.Command("sh", "-mc",
		`"$0" --drain-delay 0 --log-format json --log-level info -- "$1" signals & wait`, drainitBin, testappBin))

	started := tty.AwaitLine(t, waitTimeout, "drainit's \"app started\"", lines.Containing(`"message":"app started"`)).Text
	if !strings.Contains(started, `"tty":false`) {
		t.Errorf("drainit in the background took the terminal for the app: %s", started)
	}
	tty.AwaitLine(t, waitTimeout, "the app ready", lines.Containing("ready app "))
	if fg := foreground(t, master); fg != sh.pid {
		t.Fatalf("foreground group %d with drainit in the background, want the shell's (%d)", fg, sh.pid)
	}
	drainit := proc.Children("/proc", sh.pid)
	if len(drainit) != 1 {
		t.Fatalf("the shell's children: %v, want drainit alone", drainit)
	}
	if err := syscall.Kill(drainit[0], syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the app's SIGTERM", lines.Containing("got app SIGTERM"))
	if got := sh.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("the shell: %v, want exit 0\n%s", got, sh.dump())
	}
}

// TestTerminalBackAfterApp runs drainit from a script on a terminal (a shell with no job
// control: drainit runs in the shell's own group, which has the terminal): the app gets the
// terminal, and once it has exited the terminal is the shell's group's again, so the script's
// next read of the terminal works, as after any command. It failed with EIO while the
// terminal's foreground was the app's group, which no longer existed.
func TestTerminalBackAfterApp(t *testing.T) {
	master, tty, sh := startOnTerminal(t, exec.Command("sh", "-c",
		`"$0" --drain-delay 0 --log-format json -- "$1" exit 3; echo "drainit exited $?"; read line; echo "read $? [$line]"`,
		drainitBin, testappBin))
	tty.AwaitLine(t, waitTimeout, "drainit's exit", lines.Containing("drainit exited 3"))
	if fg := foreground(t, master); fg != sh.pid {
		t.Errorf("after drainit, foreground group %d, want the shell's (%d)", fg, sh.pid)
	}
	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the shell reading the terminal after drainit", lines.Containing("read 0 [hello]"))
	if got := sh.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("the shell: %v, want exit 0\n%s", got, sh.dump())
	}
}

// TestTerminalBgKeepsShellsTerminal: Ctrl-Z stops the app and drainit, a shell's foreground job;
// the shell's bg continues the job in the background and keeps the terminal. drainit continues
// the app without taking the terminal back for it: it did, and an interactive shell's next read
// failed (bash exited).
func TestTerminalBgKeepsShellsTerminal(t *testing.T) {
	requireRoot(t) // the harness's pty helpers set the controlling terminal
	master, tty, sh := startOnTerminal(t, exec.Command("sh", "-mc",
		`"$0" --drain-delay 0 --log-format json -- "$1" signals; echo "job status $?"; bg; read line; echo "read $? [$line]"; kill %1; wait`,
		drainitBin, testappBin))
	app := tty.AwaitPID(t, waitTimeout, "ready app")
	if fg := foreground(t, master); fg != app {
		t.Fatalf("foreground group %d, want the app's (%d)", fg, app)
	}
	if _, err := master.Write([]byte{0x1a}); err != nil { // Ctrl-Z
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the shell seeing its job stopped", lines.Containing("job status 14"))
	// bg: the app is continued, in the background.
	tty.AwaitLine(t, waitTimeout, "the app's SIGCONT after bg", lines.Containing("got app SIGCONT"))
	if fg := foreground(t, master); fg != sh.pid {
		t.Errorf("after bg, foreground group %d, want the shell's (%d)", fg, sh.pid)
	}
	if _, err := master.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	tty.AwaitLine(t, waitTimeout, "the shell reading the terminal after bg", lines.Containing("read 0 [hello]"))
	tty.AwaitLine(t, waitTimeout, "the app's SIGTERM from the shell's kill %1", lines.Containing("got app SIGTERM"))
	if got := sh.wait(waitTimeout); got != (exitStatus{code: 0}) {
		t.Fatalf("the shell: %v, want exit 0\n%s", got, sh.dump())
	}
}
