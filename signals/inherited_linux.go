package signals

import (
	"os/signal"
	"unsafe"

	"golang.org/x/sys/unix"
)

// InheritedIgnored lists the signals drainit forwards that were ignored when it started, as far
// as a Go program can tell. It must be called before drainit registers any of them (os/signal's
// Notify installs a handler and forgets the inherited disposition).
//
// POSIX exec keeps ignored signals ignored, and `nohup`, `trap "" HUP`, or a script's background
// job (INT and QUIT ignored) rely on it for the whole process tree; tini keeps it. drainit does
// too, for what it can see: it leaves these signals ignored, so the app inherits them ignored
// across exec, and never forwards them (none reaches drainit).
//
// What it can see is decided by the Go runtime (runtime/signal_unix.go, initsig): at start it
// keeps an inherited SIG_IGN only for HUP and INT (signal.Ignored reports them), and leaves the
// job-control signals TSTP, TTIN, TTOU (and CONT) at their inherited disposition until a Notify;
// for every other signal it installs its own handler before main runs, so an inherited SIG_IGN
// of QUIT, TERM, PIPE, USR1, … is invisible to drainit and the app gets those at their default.
// CONT is left out: the kernel continues a stopped process whatever its disposition, and drainit
// needs to hear it to resume the app after job control.
func InheritedIgnored() []unix.Signal {
	var out []unix.Signal
	for _, sig := range []unix.Signal{unix.SIGHUP, unix.SIGINT} {
		if signal.Ignored(sig) {
			out = append(out, sig)
		}
	}
	for _, sig := range []unix.Signal{unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU} {
		if ignoredNow(sig) {
			out = append(out, sig)
		}
	}
	return out
}

// ignoredNow reports whether sig's disposition is SIG_IGN, asking the kernel (rt_sigaction with
// no new action).
func ignoredNow(sig unix.Signal) bool {
	// struct sigaction as the kernel takes it on amd64 and arm64 alike (see IgnoreUncatchable).
	var old struct {
		handler, flags, restorer uintptr
		mask                     uint64
	}
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	return errno == 0 && old.handler == 1 // SIG_IGN
}
