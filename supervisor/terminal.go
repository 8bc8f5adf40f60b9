package supervisor

import (
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// controllingTerminal reports whether stdin is drainit's controlling terminal and drainit is in
// its foreground, the condition for handing the app the foreground. A drainit started in the
// background (`drainit -- app &` in a shell) must leave the terminal to the shell: the fork
// child's tcsetpgrp is not stopped by SIGTTOU, and would take it from the shell, which then
// exits on its next read.
func controllingTerminal() bool {
	fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}

// appStopped handles Ctrl-Z (or SIGTSTP/SIGTTIN/SIGTTOU) stopping the app when it has the
// terminal: like a shell's job, drainit takes the terminal back and stops itself, so that the
// shell above it sees the job stopped; on `fg` it hands the terminal back and continues the app.
// As PID 1 there is no shell above, so the app simply stays stopped until it gets SIGCONT.
func (s *Supervisor) appStopped() {
	if s.pid1 {
		s.log.Info().Msg("app stopped by job control; send SIGCONT to resume it")
		return
	}
	setForeground(unix.Getpgrp())
	_ = unix.Kill(os.Getpid(), unix.SIGSTOP) // returns once we are continued
	setForeground(s.appPid)
	_ = unix.Kill(-s.appPid, unix.SIGCONT)
}

// setForeground makes pgid the terminal's foreground group. A background process calling
// tcsetpgrp gets SIGTTOU unless it blocks or ignores it, and while the signal is caught the kernel
// restarts the call forever; so SIGTTOU is blocked on this thread for the call.
func setForeground(pgid int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var set, old unix.Sigset_t
	set.Val[(unix.SIGTTOU-1)/64] |= 1 << ((uint(unix.SIGTTOU) - 1) % 64)
	_ = unix.PthreadSigmask(unix.SIG_BLOCK, &set, &old)
	_ = unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, pgid)
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
}
