package early

import (
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/signals"
)

// Terminating lists the signals whose default action ends a process (terminate, or dump core)
// and that a Go program can catch: every one but KILL, the uncatchable 32 to 34 and PROF (the
// runtime's profiler's). Caught (signal.Notify) and raised again with DieBy, they end a Go
// program as they end any other: the runtime would ignore USR1 or ALRM, and answer QUIT with a
// goroutine dump and exit 2.
func Terminating() []os.Signal {
	sigs := []os.Signal{signals.SIGHUP, signals.SIGINT, signals.SIGQUIT, signals.SIGILL, signals.SIGTRAP,
		signals.SIGABRT, signals.SIGBUS, signals.SIGFPE, signals.SIGUSR1, signals.SIGSEGV, signals.SIGUSR2,
		signals.SIGPIPE, signals.SIGALRM, signals.SIGTERM, signals.SIGSTKFLT, signals.SIGXCPU, signals.SIGXFSZ,
		signals.SIGVTALRM, signals.SIGIO, signals.SIGPWR, signals.SIGSYS}
	for s := unix.Signal(35); s <= signals.MaxSignal; s++ {
		sigs = append(sigs, s)
	}
	return sigs
}

// DieBy ends the process by sig at its default action, as a process that never caught it: it
// sets the disposition back to SIG_DFL and sends sig again. It returns only if that did not end
// the process (as PID 1 the kernel discards a signal left at its default): the caller then exits
// on its own.
func DieBy(s os.Signal) {
	sig, ok := s.(unix.Signal)
	if !ok {
		return
	}
	if _, err := sigaction(sig, &kernelSigaction{handler: sigDfl}); err != nil {
		return
	}
	_ = unix.Kill(unix.Getpid(), sig)
	// Taken by another thread if this one blocks it: give it that long.
	time.Sleep(100 * time.Millisecond)
}
