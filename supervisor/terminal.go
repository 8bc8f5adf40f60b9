package supervisor

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/proc"
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
// On `bg` the shell keeps the terminal, and so does drainit: it continues the app in the
// background. (It once took the terminal either way, with SIGTTOU blocked for the call, and an
// interactive shell's next read failed: bash exited.) With no shell above (noShellAbove) the
// app simply stays stopped until it gets SIGCONT.
func (s *Supervisor) appStopped() {
	if s.noShellAbove() {
		// Seen on a quiet terminal too; at most once per stopWarnEvery, for an app stopped and
		// continued in a loop.
		if n, ok := s.stopWarn.Tick(time.Now()); ok {
			s.loopLog.Warn().Int("stops", n).Msg("app stopped by job control; send SIGCONT to resume it")
		}
		return
	}
	setForeground(unix.Getpgrp())
	stopSelf()
	// A shell's fg gives the job's group the terminal before it sends SIGCONT; bg does not.
	if controllingTerminal() {
		setForeground(s.appPid)
	}
	_ = unix.Kill(-s.appPid, unix.SIGCONT)
}

// appGone gives the terminal back to drainit's group when the app's group still has it as the
// app is reaped, as a shell takes it back when its job ends: drainit's group is the one its
// parent (a shell) gave the terminal to, and left to a group with no process in it, the next
// read of the terminal (a script's after drainit) fails with EIO, and Ctrl-C reaches nobody.
func (s *Supervisor) appGone() {
	if !s.foreground {
		return
	}
	if fg, err := unix.IoctlGetInt(0, unix.TIOCGPGRP); err == nil && fg == s.appPid {
		setForeground(unix.Getpgrp())
	}
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

// noShellAbove reports whether nothing above drainit can resume it once it has stopped itself.
// Only a job-control shell resumes a job (fg, bg), and it needs the job's controlling terminal; so
// nothing can when drainit:
//   - is PID 1;
//   - has its parent outside its PID namespace (getppid is 0 there): a container's first process
//     in a PID namespace it shares with other containers (shareProcessNamespace: PID 1 is the
//     sandbox's), below the runtime, which resumes nothing. A shell, or sudo, that resumes its
//     job is in the job's PID namespace;
//   - has no controlling terminal: a container without -t, a process manager's service;
//   - has the namespace's init above it, other than a shell: the runtime's --init (tini,
//     catatonit, dumb-init), which resumes nothing (an interactive shell as PID 1, `docker run -it
//     image sh`, does);
//   - has its process group orphaned: started by anything but a job-control shell (a session of
//     its own under ssh -t or setsid). The kernel discards a job-control stop sent to such a group.
//
// Stopped with nothing to resume it, drainit would take no trigger, and the container would end
// with the runtime's SIGKILL and no drain; an app's `kill -TSTP $PPID` would do it.
func (s *Supervisor) noShellAbove() bool {
	return s.pid1 || unix.Getppid() == 0 || !hasTerminal() || initAbove() || groupOrphaned()
}

// hasTerminal reports whether drainit's session has a controlling terminal (its tty_nr in /proc;
// where /proc cannot say, whether /dev/tty opens).
func hasTerminal() bool {
	// /proc/self rather than our pid: where /proc is another PID namespace's, our pid there
	// names another process.
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if st, err := proc.ParseStat(b); err == nil {
			return st.TTY != 0
		}
	}
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	_ = unix.Close(fd)
	return true
}

// shells are the command names (/proc/PID/comm) of the shells that do job control.
var shells = []string{"sh", "bash", "dash", "ash", "ksh", "ksh93", "mksh", "zsh", "yash", "fish", "tcsh", "csh", "busybox"}

// initAbove reports whether drainit's parent is its PID namespace's init (drainit not being it)
// and not a shell, by its command name; one that cannot be read is taken for an init.
func initAbove() bool {
	if unix.Getppid() != 1 {
		return false
	}
	comm, err := os.ReadFile("/proc/1/comm")
	return err != nil || !slices.Contains(shells, strings.TrimSpace(string(comm)))
}

// groupOrphaned reports whether drainit's process group is orphaned (proc.GroupOrphaned). Where
// /proc shows no member of it, only drainit's own parent is asked, and a parent in drainit's
// own group counts as nothing above it: a wrong "orphaned" costs a Ctrl-Z that stops the app
// and not drainit, a wrong "not orphaned" a drainit stopped for good.
func groupOrphaned() bool {
	pgid := unix.Getpgrp()
	sid, err := unix.Getsid(0)
	if err != nil {
		return true
	}
	if orphaned, ok := proc.GroupOrphaned("/proc", pgid, sid); ok {
		return orphaned
	}
	ppid := unix.Getppid()
	ppgid, err1 := unix.Getpgid(ppid)
	psid, err2 := unix.Getsid(ppid)
	return err1 != nil || err2 != nil || ppgid == pgid || psid != sid
}

// suspendsOn reports whether drainit stops itself after passing sig on, as dumb-init does: sig
// is a job-control stop (Ctrl-Z, or a shell's kill -TSTP %job), drainit is a shell's job (not
// noShellAbove), and the app does not have the terminal (drainit's stdin is not it). Ctrl-Z then
// reaches drainit's group, not the app's, and unless drainit stops too the shell never sees its
// job stopped and waits for ever. With the terminal the app's group gets Ctrl-Z itself, and
// appStopped follows it instead.
func (s *Supervisor) suspendsOn(sig unix.Signal) bool {
	// The signal first: the loop asks for every signal, and noShellAbove reads /proc.
	jobStop := sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
	return jobStop && !s.foreground && !s.noShellAbove()
}

// suspend stops the app and then drainit until the shell continues its job: the shell's
// SIGCONT reaches drainit, which passes it on to the app as any forwarded signal. The app has
// had the stop signal itself (forwarded), but without the terminal it runs in a session of its
// own, an orphaned process group, and the kernel discards SIGTSTP, SIGTTIN and SIGTTOU sent to
// those: only SIGSTOP stops it.
func (s *Supervisor) suspend() {
	s.loopLog.Debug().Msg("job-control stop: stopping the app and drainit")
	s.send(toApp, unix.SIGSTOP)
	stopSelf()
}

// stopSelf stops drainit, as a job stops, and returns once it has been continued. The SIGSTOP
// goes to the calling thread: sent to the process, another thread may take it, and this one
// ran on past the kill until the group stop reached it, on into what was meant for after the
// SIGCONT (it read the terminal's foreground group before the shell had taken it back, in one
// run of three, and handed the terminal to the app on bg).
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
}
