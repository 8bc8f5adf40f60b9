package signals

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The Linux numbers and names that drainit check uses on macOS and Windows are Linux's own: a
// manifest read there means what it means in the container.
func TestLinuxNumbersMatchUnix(t *testing.T) {
	for sig := syscall.Signal(1); sig <= 31; sig++ {
		name := unix.SignalName(sig)
		if name == "" || linuxNames[sig] != name {
			t.Errorf("signal %d: table says %q, x/sys/unix says %q", int(sig), linuxNames[sig], name)
		}
		if got := unix.SignalNum(linuxNames[sig]); got != sig {
			t.Errorf("x/sys/unix numbers %s as %d, the table as %d", linuxNames[sig], int(got), int(sig))
		}
	}
	if len(linuxNames) != 32 {
		t.Errorf("table has %d entries, want 32 (0 unused, 1-31)", len(linuxNames))
	}
	consts := map[syscall.Signal]syscall.Signal{
		SIGHUP: unix.SIGHUP, SIGINT: unix.SIGINT, SIGQUIT: unix.SIGQUIT, SIGILL: unix.SIGILL,
		SIGTRAP: unix.SIGTRAP, SIGABRT: unix.SIGABRT, SIGBUS: unix.SIGBUS, SIGFPE: unix.SIGFPE,
		SIGKILL: unix.SIGKILL, SIGUSR1: unix.SIGUSR1, SIGSEGV: unix.SIGSEGV, SIGUSR2: unix.SIGUSR2,
		SIGPIPE: unix.SIGPIPE, SIGALRM: unix.SIGALRM, SIGTERM: unix.SIGTERM, SIGSTKFLT: unix.SIGSTKFLT,
		SIGCHLD: unix.SIGCHLD, SIGCONT: unix.SIGCONT, SIGSTOP: unix.SIGSTOP, SIGTSTP: unix.SIGTSTP,
		SIGTTIN: unix.SIGTTIN, SIGTTOU: unix.SIGTTOU, SIGURG: unix.SIGURG, SIGXCPU: unix.SIGXCPU,
		SIGXFSZ: unix.SIGXFSZ, SIGVTALRM: unix.SIGVTALRM, SIGPROF: unix.SIGPROF, SIGWINCH: unix.SIGWINCH,
		SIGIO: unix.SIGIO, SIGPWR: unix.SIGPWR, SIGSYS: unix.SIGSYS,
	}
	if len(consts) != 31 {
		t.Fatalf("%d distinct constants, want 31", len(consts))
	}
	for mine, theirs := range consts {
		if mine != theirs {
			t.Errorf("%s is %d here, %d in x/sys/unix", linuxNames[mine], int(mine), int(theirs))
		}
	}
}
