package supervisor

import (
	"os"

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
	// signal sends sig to the app's group, or to the app alone.
	signal(app int, sig unix.Signal, groupWide bool)
	// signalAll sends sig to the app's group and then to every other process drainit can end.
	signalAll(app int, sig unix.Signal)
	// reap collects every child that has changed state, without blocking; none reports that no
	// child is left at all.
	reap(extraFlags int) (exits []exit, none bool)
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

func (linuxProcesses) signal(app int, sig unix.Signal, groupWide bool) {
	if !groupWide {
		_ = unix.Kill(app, sig)
		return
	}
	// The app leads its own group (setsid or setpgid at spawn), so its pgid is its pid. ESRCH
	// only means the group is already gone.
	_ = unix.Kill(-app, sig)
}

// signalAll reaches, after the app's group, as PID 1 all of the PID namespace, as a subreaper
// every descendant found in /proc.
func (p linuxProcesses) signalAll(app int, sig unix.Signal) {
	_ = unix.Kill(-app, sig)
	if p.pid1 {
		_ = unix.Kill(-1, sig)
		return
	}
	// A process can fork between the scan and the kill; a few rounds catch those children too.
	for range 3 {
		ds := proc.Descendants("/proc", os.Getpid())
		if len(ds) == 0 {
			return
		}
		for _, d := range ds {
			_ = unix.Kill(d, sig)
		}
	}
}

func (linuxProcesses) reap(extraFlags int) ([]exit, bool) { return reap(extraFlags) }
