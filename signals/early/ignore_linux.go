package early

import (
	"fmt"
	"reflect"
	"unsafe"

	"golang.org/x/sys/unix"
)

// DiscardUncatchable makes the uncatchable signals the runtime leaves at their default action
// (32 and 34) do nothing to drainit, so that none of them can end it, and leaves the app to get
// them as drainit got them: at their default action, or ignored when they were ignored at start
// (the runtime never installs anything on them, so their disposition now is the inherited one).
//
// Not SIG_IGN, which exec keeps: the app would start with 32 and 34 ignored, which no other init
// does (tini's own signal test checks it). exec resets a handler to the default action, so
// drainit gives them one that returns at once (discard). The Go runtime's child between fork and
// exec leaves it in place (it resets only the signals it handles itself), and a signal that
// reaches the child there is discarded too.
func DiscardUncatchable() error {
	// The runtime's own action for SEGV, which it installs in every Go program, has the flags
	// and the restorer a handler needs on this architecture (SA_ONSTACK: the kernel's frame
	// goes on the thread's signal stack, never on a goroutine's small one; SA_RESTORER on
	// amd64, which the kernel requires there).
	act, err := sigaction(unix.SIGSEGV, nil)
	if err != nil {
		return fmt.Errorf("reading the runtime's action for SIGSEGV: %w", err)
	}
	act.handler = reflect.ValueOf(discard).Pointer()
	for _, sig := range []unix.Signal{32, 34} {
		old, err := sigaction(sig, nil)
		if err != nil {
			return fmt.Errorf("reading the action for signal %d: %w", sig, err)
		}
		if old.handler == sigIgn {
			continue
		}
		if _, err := sigaction(sig, &act); err != nil {
			return fmt.Errorf("setting a handler for signal %d: %w", sig, err)
		}
	}
	return nil
}

// discard is the handler of 32 and 34: it returns to the kernel's signal frame at once. The
// kernel calls it on any of drainit's threads, or in the child before exec, with no Go state
// in place: it must touch nothing, not even the stack (nosplit: no stack check, which would
// read the goroutine the interrupted code left in the g register; norace: no call into the
// race detector). An empty function is one return instruction on every architecture.
//
//go:nosplit
//go:norace
func discard() {}

// kernelSigaction is struct sigaction as the kernel takes it on amd64 and arm64 alike: handler,
// flags, restorer, mask. All zero is SIG_DFL with nothing more.
type kernelSigaction struct {
	handler, flags, restorer uintptr
	mask                     uint64
}

// The handlers that are no function.
const (
	sigDfl = 0
	sigIgn = 1
)

// sigaction is rt_sigaction for sig: it sets act unless nil, and returns the action before.
// Raw: os/signal sets neither SIG_DFL on a signal the Go runtime handles nor anything on the ones
// it keeps for itself.
func sigaction(sig unix.Signal, act *kernelSigaction) (kernelSigaction, error) {
	var old kernelSigaction
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	if errno != 0 {
		return old, errno
	}
	return old, nil
}
