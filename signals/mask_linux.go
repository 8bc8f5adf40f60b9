package signals

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// StartUnblocked runs fork, a fork and exec (syscall.ForkExec), with no signal blocked on the
// calling thread, so that the child starts with none blocked. drainit starts its exec hooks so:
// a hook is drainit's own tool, which it stops with SIGTERM at its deadline, whatever mask
// drainit's parent left. (The app is started with the mask drainit started with, as exec
// would have it: see Blocked.)
//
// The Go runtime gives a child the signal mask of the thread that forks it (it saves the
// thread's mask before the fork and the child sets it again before the exec), and drainit's
// threads keep the mask drainit started with, but for the signals the runtime unblocks to handle
// them itself (TERM, INT, HUP, QUIT and the faults among them).
//
// Only the forking thread is unblocked, and only for the fork: every signal drainit registers
// before the app starts has the runtime's handler by then, so one that was pending is queued for
// drainit, not lost; the rarely sent ones it registers after the start (Late) are dropped until
// then anyway. drainit itself keeps its start mask, which holds a signal sent while it starts
// until its handler exists (the runtime's signal thread unblocks each signal as it is
// registered).
func StartUnblocked(fork func() (int, error)) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var none, old unix.Sigset_t
	// It cannot fail (only an unknown how is refused); were it to, the child would start with
	// the inherited mask, as without this.
	if unix.PthreadSigmask(unix.SIG_SETMASK, &none, &old) == nil {
		defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	}
	return fork()
}

// Blocked lists the signals blocked on the calling thread: on any of drainit's threads but the
// Go runtime's signal thread, the ones drainit started with blocked, less those the runtime
// unblocks before any of drainit's code runs (HUP, INT, QUIT, ILL, TRAP, ABRT, BUS, FPE, SEGV,
// TERM, STKFLT, CHLD, PROF, SYS, URG and 32 to 34: the runtime's sigtable marks them to
// be unblocked, or as ending the program). It is the mask the app starts with, and the one
// StartUnblocked empties for a hook.
func Blocked() []unix.Signal {
	var set unix.Sigset_t
	if unix.PthreadSigmask(unix.SIG_BLOCK, nil, &set) != nil {
		return nil
	}
	return setSignals(&set)
}

// setSignals lists the signals in set, whose words are 64 bits wide or, on 32-bit
// architectures, 32.
func setSignals(set *unix.Sigset_t) []unix.Signal {
	const per = int(unsafe.Sizeof(set.Val[0])) * 8
	var sigs []unix.Signal
	for i := range MaxSignal {
		if uint64(set.Val[i/per])>>(i%per)&1 != 0 {
			sigs = append(sigs, unix.Signal(i+1))
		}
	}
	return sigs
}
