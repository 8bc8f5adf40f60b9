package startsig

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/signals"
)

// StartUnblocked runs fork, a fork and exec (syscall.ForkExec), with no signal blocked on the
// calling thread, so that the child starts with none blocked. drainit starts its exec hooks so:
// a hook is drainit's own tool, which it stops with SIGTERM at its deadline, whatever mask
// drainit's parent left.
func StartUnblocked(fork func() (int, error)) (int, error) {
	var none unix.Sigset_t
	return startWith(&none, fork)
}

// StartInherited runs fork with the signal mask drainit started with on the calling thread, so
// that the child, the app, starts with it, as exec would have it (and tini does). Without
// drainit's entry point (StartBlocked has why), the child gets the thread's mask.
func StartInherited(fork func() (int, error)) (int, error) {
	set, ok := startSet()
	if !ok {
		return fork()
	}
	return startWith(&set, fork)
}

// startWith runs fork with the calling thread's mask set to set, and puts the mask back after.
//
// The Go runtime gives a child the signal mask of the thread that forks it (it saves the
// thread's mask before the fork and the child sets it again before the exec). Only the forking
// thread has set, and only for the fork: a signal it unblocks there meanwhile is taken by the
// runtime's handler as on any other thread (every signal drainit registers before the app
// starts has it by then; the rarely sent ones it registers after the start, Late, are dropped
// until then anyway), and one it blocks is taken by another thread.
func startWith(set *unix.Sigset_t, fork func() (int, error)) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.Sigset_t
	// It cannot fail (only an unknown how is refused); were it to, the child would start with
	// the thread's mask.
	if unix.PthreadSigmask(unix.SIG_SETMASK, set, &old) == nil {
		defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	}
	return fork()
}

// StartBlocked lists the signals blocked when drainit started: the mask the app starts with
// (StartInherited). drainit's entry point reads it before the Go runtime starts (package
// startsig); without it (a build without the entry point) it is the calling thread's mask,
// which is drainit's start mask less the signals the runtime unblocks on every thread before
// any of drainit's code runs (HUP, INT, QUIT, ILL, TRAP, ABRT, BUS, FPE, SEGV, TERM, STKFLT,
// CHLD, PROF, SYS, URG and 32 to 34: the runtime's sigtable marks them to be unblocked, or as
// ending the program).
func StartBlocked() []unix.Signal {
	if set, ok := startSet(); ok {
		return setSignals(&set)
	}
	return Blocked()
}

// Blocked lists the signals blocked on the calling thread.
func Blocked() []unix.Signal {
	var set unix.Sigset_t
	if unix.PthreadSigmask(unix.SIG_BLOCK, nil, &set) != nil {
		return nil
	}
	return setSignals(&set)
}

// startSet is the mask drainit started with (Mask, bit n-1 for signal n) as a set,
// whose words are 64 bits wide or, on 32-bit architectures, 32; false when it is not known.
func startSet() (set unix.Sigset_t, ok bool) {
	mask, ok := Mask()
	const per = int(unsafe.Sizeof(set.Val[0])) * 8
	for i := range signals.MaxSignal {
		if mask>>i&1 != 0 {
			set.Val[i/per] |= 1 << (i % per)
		}
	}
	return set, ok
}

// setSignals lists the signals in set, whose words are 64 bits wide or, on 32-bit
// architectures, 32.
func setSignals(set *unix.Sigset_t) []unix.Signal {
	const per = int(unsafe.Sizeof(set.Val[0])) * 8
	var sigs []unix.Signal
	for i := range signals.MaxSignal {
		if uint64(set.Val[i/per])>>(i%per)&1 != 0 {
			sigs = append(sigs, unix.Signal(i+1))
		}
	}
	return sigs
}
