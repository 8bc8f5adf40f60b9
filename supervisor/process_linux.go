package supervisor

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/proc"
)

// processes is everything the loop does to processes. The Linux implementation (linuxProcesses)
// calls the kernel; the loop's unit tests use a fake that records what it was asked and hands
// back the exits the test scripts.
type processes interface {
	// adopt makes orphans of the app drainit's children when it is not PID 1 (as PID 1 they are
	// already), so that they are reaped and "everything" can reach them.
	adopt() error
	// start starts the app in a process group of its own (the terminal's foreground group when
	// foreground) and returns its pid, which is also the group's id.
	start(argv []string, foreground bool) (pid int, err error)
	// signal sends sig to the app's group, or to the app alone. reaped says the app has been
	// reaped: its pid, and its group's id once the group is empty, may be a stranger's by now.
	signal(app int, sig unix.Signal, groupWide, reaped bool)
	// signalAll sends sig to the app's group (unless reaped, as for signal) and then to every
	// other process drainit can end.
	signalAll(app int, sig unix.Signal, reaped bool)
	// reap collects every child that has changed state, without blocking; none reports that no
	// child is left at all.
	reap(extraFlags int) (exits []exit, none bool)
	// stopped reports whether the app (unless reaped), or with everything any process drainit
	// can end, is stopped by job control (SIGSTOP, SIGTSTP) or a tracer.
	stopped(app int, reaped, everything bool) bool
	// workers counts the app's children in its process group that run the app's program and, as
	// the app does, catch sig: a pre-fork master's workers (see linuxProcesses.workers).
	workers(app int, sig unix.Signal) int
	// survivors describes each process drainit still sees below it, with what keeps it from
	// ending or from being reaped, once drainit has given up waiting for it after SIGKILL.
	survivors() []string
}

// linuxProcesses is processes on the real kernel.
type linuxProcesses struct {
	pid1 bool
}

func (p linuxProcesses) adopt() error {
	if p.pid1 {
		return nil
	}
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

func (linuxProcesses) start(argv []string, foreground bool) (int, error) {
	return spawn(argv, foreground)
}

func (p linuxProcesses) signal(app int, sig unix.Signal, groupWide, reaped bool) {
	switch {
	case !groupWide:
		_ = unix.Kill(app, sig)
	case reaped && !p.pid1:
		signalGroupLeft(app, sig)
	default:
		// The app leads its own group (setsid or setpgid at spawn), so its pgid is its pid.
		// ESRCH only means the group is already gone. As PID 1, a group that got the number
		// again after the app's can only be the namespace's, which drainit is ending anyway.
		_ = unix.Kill(-app, sig)
	}
}

// signalGroupLeft sends sig to what is left of the app's group after the app has been reaped,
// as a subreaper: each of drainit's descendants in group pgid. kill(-pgid) could reach a
// stranger: once the group's last member is gone the kernel gives the number out again, and
// outside a PID namespace of its own drainit shares the numbers with the whole machine (seen: a
// forwarded SIGUSR1, and the cleanup's SIGKILL, ended an unrelated process that had the reaped
// app's pid as its own group's id). No member is missed: a process joins a group only in its own
// session, and the members of the app's session descend from the app, which drainit adopts as a
// subreaper.
func signalGroupLeft(pgid int, sig unix.Signal) {
	for _, d := range descendants() {
		if st, err := proc.ReadStat("/proc", d); err == nil && st.PGID == pgid {
			_ = unix.Kill(d, sig)
		}
	}
}

// signalAll reaches, after the app's group, as PID 1 all of the PID namespace, as a subreaper
// every descendant found in /proc. Once the app has been reaped its group is left out (see
// signalGroupLeft): what is left of it is among the rest.
func (p linuxProcesses) signalAll(app int, sig unix.Signal, reaped bool) {
	if !reaped {
		_ = unix.Kill(-app, sig)
	}
	if p.pid1 {
		_ = unix.Kill(-1, sig)
		return
	}
	signalEach(sig, descendants, unix.Kill)
}

// signalEach sends sig once to each process list finds (drainit's descendants). A process can
// fork between the scan and the kill; a few rounds catch those children too. Once, as kill(-1)
// as PID 1: a process still there at the next scan (one that handles SIGTERM and takes its time)
// would see the signal again, and to many apps a second SIGTERM is a forced stop. One that forks
// on and on, each parent exiting, can outrun the rounds: while killing, the loop calls signalAll
// again each time it reaps something and anything is left (machine.reapedSome).
func signalEach(sig unix.Signal, list func() []int, kill func(int, unix.Signal) error) {
	sent := map[int]bool{}
	for range 3 {
		fresh := false
		for _, d := range list() {
			if !sent[d] {
				sent[d], fresh = true, true
				_ = kill(d, sig)
			}
		}
		if !fresh {
			return
		}
	}
}

// workers is the shape of a pre-fork server (gunicorn, uWSGI, unicorn, puma, nginx, haproxy -W):
// a master that handles the stop signal, and children it forked that run the same program, in
// its group, handling it too. Such a master usually stops its workers itself, passing the signal
// on, and a group-wide stop signal gets each of them it twice (seen: gunicorn, 2 to 7 of 9
// workers "terminated due to signal 15", their graceful stop cut short). Children that run
// another program (a shell's commands, a helper), or that leave the signal at its default, are
// not counted, nor one younger than workerAge.
func (linuxProcesses) workers(app int, sig unix.Signal) int {
	exe, err := proc.Exe("/proc", app)
	var now unix.Timespec
	if err != nil || !proc.Catches("/proc", app, int(sig)) || unix.ClockGettime(unix.CLOCK_BOOTTIME, &now) != nil {
		return 0
	}
	// /proc's start times count USER_HZ ticks since boot, 100 a second on every architecture Go
	// builds drainit for.
	latest := uint64(now.Nano()-workerAge.Nanoseconds()) / uint64(time.Second/100)
	n := 0
	for _, c := range proc.Children("/proc", app) {
		b, err := proc.StatLine("/proc", c)
		if err != nil {
			continue
		}
		st, err := proc.ParseStat(b)
		start, serr := proc.ParseStartTime(b)
		if err != nil || serr != nil || st.PGID != app || st.Gone() || start > latest || !proc.Catches("/proc", c, int(sig)) {
			continue
		}
		if ce, err := proc.Exe("/proc", c); err == nil && os.SameFile(exe, ce) {
			n++
		}
	}
	return n
}

// workerAge is how long a child must have run to count as a worker: one just forked runs its
// parent's program, with its parent's handlers, until its exec (seen: the sleeps of a shell's
// `sleep 300 &`, taken for workers when the stop came a few milliseconds after the forks).
const workerAge = time.Second

func (linuxProcesses) reap(extraFlags int) ([]exit, bool) { return reap(extraFlags) }

func (linuxProcesses) stopped(app int, reaped, everything bool) bool {
	isStopped := func(pid int) bool {
		st, err := proc.ReadStat("/proc", pid)
		return err == nil && st.Stopped()
	}
	if !everything {
		return !reaped && isStopped(app)
	}
	// As PID 1 its descendants are the namespace's every process; as a subreaper, what it may end.
	for _, pid := range descendants() {
		if isStopped(pid) {
			return true
		}
	}
	return false
}

// descendants lists every process below drainit, from the kernel's lists of children where it
// keeps them: a walk of drainit's tree alone, where a scan of all of /proc takes long enough on
// a busy machine for a process that forks and exits every few hundred microseconds to be gone,
// with a new pid, by the time its pid is signalled (proc.Tree).
func descendants() []int { return proc.Below("/proc", os.Getpid()) }

func (linuxProcesses) survivors() []string {
	var out []string
	for _, pid := range descendants() {
		st, err := proc.ReadStat("/proc", pid)
		if err != nil {
			continue // reaped meanwhile
		}
		tracer, _ := proc.StatusField("/proc", pid, "TracerPid")
		n, _ := strconv.Atoi(tracer)
		parent := 0
		if st.PPID != os.Getpid() {
			parent = st.PPID
		}
		out = append(out, survivor(pid, st.State, n, parent, unix.Kill(pid, 0) == unix.EPERM))
	}
	return out
}

// survivor says what keeps a process from ending after SIGKILL, or drainit from collecting it:
// its state, its tracer (who collects a traced process's exit before its parent does), and
// whether drainit may signal it at all (a process that has become another user's, through
// setuid or sudo, is not drainit's to kill unless drainit is root).
func survivor(pid int, state byte, tracer, parent int, denied bool) string {
	switch {
	case denied:
		return fmt.Sprintf("pid %d: not permitted to signal it (it runs as another user)", pid)
	case tracer != 0 && state == 'Z':
		return fmt.Sprintf("pid %d: has exited, but its tracer (pid %d) has not collected its exit", pid, tracer)
	case tracer != 0:
		return fmt.Sprintf("pid %d: traced by pid %d (state %c)", pid, tracer, state)
	case state == 'Z' && parent != 0:
		return fmt.Sprintf("pid %d: has exited, but its parent (pid %d) has not collected its exit (stuck, or not waiting for its children)", pid, parent)
	case state == 'Z':
		return fmt.Sprintf("pid %d: has exited, but its exit has not come to drainit (a tracer outside this PID namespace has not collected it?)", pid)
	case state == 'D':
		return fmt.Sprintf("pid %d: in uninterruptible sleep (D): waiting in the kernel (a hung mount or device?)", pid)
	}
	return fmt.Sprintf("pid %d: state %c", pid, state)
}
