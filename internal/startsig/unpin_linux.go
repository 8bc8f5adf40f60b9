//go:build linux

package startsig

import (
	"errors"
	"fmt"
	"math/bits"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Unpin gives every thread of the process the CPU affinity the process started with, ending
// the entry point's pin (see the package doc); it does nothing where the entry point pinned
// nothing, or once it is done. A child process inherits the affinity of the thread that starts
// it, so Unpin must come before the process starts any. Not safe for concurrent use.
//
// Affinity is a thread's own and the runtime has started threads by now, so each is set:
// syscall.AllThreadsSyscall, which x/sys/unix has no equivalent of (it needs the runtime), and
// which a cgo build refuses (ENOTSUP; drainit is built without cgo). Where the mask the process
// started with is no longer allowed (its cpuset lost those CPUs meanwhile: EINVAL), every CPU
// is asked for, which the kernel narrows to what the cpuset allows. A cpuset that grew between
// the pin and Unpin (a kubelet's CPU manager moving the shared pool, within those ~2 ms) is
// not followed: the threads get the CPUs in both, until the cpuset's next change sets them all.
func Unpin() error {
	if pinned == 0 {
		return nil
	}
	pinned = 0
	n := 0
	for _, b := range origMask[:origLen] {
		n += bits.OnesCount8(b)
	}
	if n <= 1 {
		return nil // started on one CPU: the pin changed nothing
	}
	err := setAffinity(origMask[:origLen])
	if errors.Is(err, unix.EINVAL) {
		all := pinMask[:origLen] // no longer needed
		for i := range all {
			all[i] = 0xff
		}
		err = setAffinity(all)
	}
	if err != nil {
		return fmt.Errorf("restoring the CPU affinity of %d CPUs after the start on CPU %d: %w", n, cpu, err)
	}
	return nil
}

// setAffinity sets mask as the affinity of every thread of the process.
func setAffinity(mask []byte) error {
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_SCHED_SETAFFINITY, 0, uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
