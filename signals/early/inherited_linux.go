package early

import (
	"os/signal"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/internal/startsig"
	"github.com/drainit/drainit/signals"
)

// InheritedIgnored lists the signals that were ignored when drainit started and that drainit
// keeps ignored (Keepable), so that the app inherits them ignored across exec; drainit forwards
// none of them (none reaches drainit). lost lists the others ignored at start, which the app
// gets at their default action (Keepable says why), for the log: an init that drops an ignore
// its caller set must say so. all reports whether every signal could be seen (lost is then
// complete). It must be called before drainit registers any of them (os/signal's Notify
// installs a handler and forgets the inherited disposition).
//
// POSIX exec keeps ignored signals ignored (`nohup`, `trap "" PIPE`, a script's background job
// rely on it; docs/design.md). The Go runtime installs its own handler for most signals before
// any package is initialised and forgets an inherited SIG_IGN, but for HUP and INT (which
// signal.Ignored reports) and the job-control signals TSTP, TTIN, TTOU (and CONT), which it
// leaves alone until a Notify: without drainit's entry point (package startsig) only those five
// can be seen, and every other inherited SIG_IGN reaches the app as the default action.
func InheritedIgnored() (ignored, lost []unix.Signal, all bool) {
	if mask, ok := startsig.Ignored(); ok {
		for sig := unix.Signal(1); sig <= signals.MaxSignal; sig++ {
			switch {
			case mask&(1<<(sig-1)) == 0:
			case Keepable(sig):
				ignored = append(ignored, sig)
			case sig != 32 && sig != 34: // those two stay as they were (Keepable)
				lost = append(lost, sig)
			}
		}
		return ignored, lost, true
	}
	for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT} {
		if signal.Ignored(sig) {
			ignored = append(ignored, sig)
		}
	}
	for _, sig := range []unix.Signal{unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU} {
		if ignoredNow(sig) {
			ignored = append(ignored, sig)
		}
	}
	return ignored, nil, false
}

// Keepable reports whether drainit can keep sig ignored for the app when it was ignored at
// start: os/signal's Ignore sets SIG_IGN, which exec keeps, for every signal in the runtime's
// table marked for os/signal (runtime/sigtab_linux_generic.go, _SigNotify) but PROF. The others,
// which the app then gets at their default action:
//   - KILL, STOP: no process can ignore them.
//   - CHLD: ignoring it makes the kernel reap drainit's children itself, and drainit could no
//     longer learn the app's exit status (docs/design.md: what that leaves an app that counted
//     on it; POSIX leaves the case unspecified across exec, Linux keeps the ignore).
//   - CONT: drainit must hear it to resume the app after job control; the kernel continues a
//     stopped process whatever the disposition, so the app sees no difference but in SigIgn.
//   - URG: the runtime preempts goroutines with it, and os/signal's Ignore would set SIG_IGN
//     on it, after which the kernel drops it (measured: a goroutine looping without calls then
//     keeps its thread forever). Its default action discards it as SIG_IGN does.
//   - PROF: the runtime keeps its handler for its profiler (Ignore does nothing to it), and
//     resets it to the default in the child before exec.
//   - ILL, TRAP, BUS, FPE, SEGV, STKFLT, SYS: the runtime's fault handlers, which Ignore does not
//     replace. (A real fault is delivered even when ignored: the kernel forces it.)
//   - 32, 33, 34: 33 is the runtime's; 32 and 34 need no Ignore: the runtime never touches
//     them, so an inherited SIG_IGN stays as it was (DiscardUncatchable leaves it).
func Keepable(sig unix.Signal) bool {
	if sig < 1 || sig > signals.MaxSignal {
		return false
	}
	switch sig {
	case signals.SIGKILL, signals.SIGSTOP, signals.SIGCHLD, signals.SIGCONT, signals.SIGURG, signals.SIGPROF,
		signals.SIGILL, signals.SIGTRAP, signals.SIGBUS, signals.SIGFPE, signals.SIGSEGV, signals.SIGSTKFLT, signals.SIGSYS,
		32, 33, 34:
		return false
	}
	return true
}

// ignoredNow reports whether sig's disposition is SIG_IGN, asking the kernel (rt_sigaction with
// no new action).
func ignoredNow(sig unix.Signal) bool {
	old, err := sigaction(sig, nil)
	return err == nil && old.handler == sigIgn
}
