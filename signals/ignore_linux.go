package signals

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IgnoreUncatchable makes the uncatchable signals the runtime leaves at their default action
// (32 and 34) ignored, so that none of them can end drainit. Ignored dispositions survive exec:
// the app starts with them ignored too, which an app that installs its own handler (glibc does
// for 32) never notices.
func IgnoreUncatchable() error {
	for _, sig := range []unix.Signal{32, 34} {
		if _, err := sigaction(sig, &kernelSigaction{handler: sigIgn}); err != nil {
			return fmt.Errorf("ignoring signal %d: %w", sig, err)
		}
	}
	return nil
}

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
