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
	// struct sigaction as the kernel takes it on amd64 and arm64 alike: handler, flags,
	// restorer, mask. SIG_IGN is 1.
	var sa struct {
		handler, flags, restorer uintptr
		mask                     uint64
	}
	sa.handler = 1
	for _, sig := range []unix.Signal{32, 34} {
		if _, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); errno != 0 {
			return fmt.Errorf("ignoring signal %d: %w", sig, errno)
		}
	}
	return nil
}
