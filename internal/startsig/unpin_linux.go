//go:build linux

package startsig

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Unpin gives every thread of the process the CPU affinity the process started with, ending
// the entry point's pin (see the package doc); it does nothing where the entry point pinned
// nothing, or once it is done. A child process inherits the affinity of the thread that starts
// it, so Unpin must come before the process starts any. Not safe for concurrent use.
//
// Affinity is a thread's own and the runtime has started threads by now, so each is set (see
// setAffinity). From Linux 6.2 the kernel keeps the mask a sched_setaffinity asked for, a child
// inherits it, and every later change of the cpuset is narrowed to it (docs/design.md). So where
// the start's CPUs are all the cpuset allows (followsCpuset), every CPU is asked for, and the app
// follows its cpuset as with no init in front of it (so does an app whose launcher asked for
// exactly the cpuset's CPUs: that cannot be told from none). Otherwise a launcher chose them
// (`taskset -c 1 drainit …`) and they are asked for, as the launcher did; where the cpuset lost
// them meanwhile (EINVAL), every CPU is. A cpuset that grew between the pin and Unpin (~1 ms)
// cannot be told from a launcher's choice and is not followed.
func Unpin() error {
	if pinned == 0 {
		return nil
	}
	pinned = 0
	orig := origMask[:origLen]
	n := 0
	for _, b := range orig {
		n += bits.OnesCount8(b)
	}
	if n == 0 {
		return nil // the entry point read no CPU: nothing to give back
	}
	all := pinMask[:origLen] // no longer needed
	for i := range all {
		all[i] = 0xff
	}
	mask := orig
	follows, err := followsCpuset(all, orig)
	switch {
	case err != nil:
		// The kernel would not say: the start's CPUs, as before.
	case follows:
		mask = all
	case n == 1:
		// A launcher's one CPU: the pin asked for it already, on every thread.
		return nil
	}
	err = setAffinity(mask)
	if errors.Is(err, unix.EINVAL) && !follows {
		err = setAffinity(all)
	}
	if err != nil {
		return fmt.Errorf("restoring the CPU affinity of %d CPUs after the start on CPU %d: %w", n, cpu, err)
	}
	return nil
}

// followsCpuset asks for every CPU (all) on the calling thread and reports whether what the
// kernel gives, every CPU the cpuset allows, is the start's mask (orig). When it is not, it asks
// for orig again on that thread, so that a launcher's choice holds there too.
func followsCpuset(all, orig []byte) (bool, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, _, errno := unix.RawSyscall(unix.SYS_SCHED_SETAFFINITY, 0, uintptr(len(all)), uintptr(unsafe.Pointer(&all[0]))); errno != 0 {
		return false, errno
	}
	var got [len(origMask)]byte
	k, _, getErr := unix.RawSyscall(unix.SYS_SCHED_GETAFFINITY, 0, uintptr(len(orig)), uintptr(unsafe.Pointer(&got[0])))
	if getErr == 0 && bytes.Equal(got[:k], orig) {
		return true, nil
	}
	// Not known to follow (or the kernel would not say): this thread asks for orig again either way.
	unix.RawSyscall(unix.SYS_SCHED_SETAFFINITY, 0, uintptr(len(orig)), uintptr(unsafe.Pointer(&orig[0])))
	if getErr != 0 {
		return false, getErr
	}
	return false, nil
}

// setAffinity sets mask as the affinity of every thread of the process.
//
// It sets each thread by its ID, listed in /proc/self/task: sched_setaffinity takes any thread
// of the process, and the others need not run for it. syscall.AllThreadsSyscall, the fallback
// where /proc cannot be read, stops the world and has every thread make the call itself, which
// took ~0.1 ms of each start on one CPU (bench/STARTUP.md); it also refuses a cgo build.
func setAffinity(mask []byte) error {
	err := setEachThread(mask)
	if err == nil || errors.Is(err, unix.EINVAL) {
		return err
	}
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_SCHED_SETAFFINITY, 0, uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0])))
	if errno != 0 {
		return fmt.Errorf("%w (and from /proc/self/task: %w)", errno, err)
	}
	return nil
}

// setEachThread sets mask on every thread /proc/self/task lists, and lists them again until a
// listing shows none it has not set. A thread inherits the affinity of the one that creates it,
// at its creation: once a listing finds only threads set before it began, any thread created
// since was created by one of them, so has mask. A thread gone meanwhile (ESRCH) needs nothing.
//
// The IDs are those of the pid namespace /proc was mounted for, which sched_setaffinity would
// read in drainit's: where /proc is another namespace's (`unshare --pid` without a /proc of its
// own), they name other threads, so it refuses that /proc (see ownProc).
func setEachThread(mask []byte) error {
	if err := ownProc(); err != nil {
		return err
	}
	var set []int // a handful: the runtime's threads at the start
	var buf [2048]byte
	for {
		fd, err := unix.Open("/proc/self/task", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("listing the threads: %w", err)
		}
		var tids []int
		for {
			n, err := unix.ReadDirent(fd, buf[:])
			if err != nil {
				unix.Close(fd)
				return fmt.Errorf("listing the threads: %w", err)
			}
			if n == 0 {
				break
			}
			_, _, names := unix.ParseDirent(buf[:n], -1, nil)
			for _, name := range names {
				// "." and ".." are no thread's.
				if tid, err := strconv.Atoi(name); err == nil && tid > 0 {
					tids = append(tids, tid)
				}
			}
		}
		unix.Close(fd)
		if listedHook != nil {
			listedHook()
		}
		fresh := false
		for _, tid := range tids {
			if slices.Contains(set, tid) {
				continue
			}
			fresh = true
			_, _, errno := unix.RawSyscall(unix.SYS_SCHED_SETAFFINITY, uintptr(tid), uintptr(len(mask)), uintptr(unsafe.Pointer(&mask[0])))
			if errno != 0 && errno != unix.ESRCH {
				return fmt.Errorf("thread %d: %w", tid, errno)
			}
			set = append(set, tid)
		}
		if !fresh {
			return nil
		}
	}
}

// ownProc says whether /proc is drainit's pid namespace's: /proc/thread-self names, in the
// namespace of the mount, the process and thread that read it, which must be drainit's IDs.
func ownProc() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var buf [64]byte
	n, err := unix.Readlink("/proc/thread-self", buf[:])
	if err != nil {
		return fmt.Errorf("reading /proc/thread-self: %w", err)
	}
	want := strconv.Itoa(unix.Getpid()) + "/task/" + strconv.Itoa(unix.Gettid())
	if got := string(buf[:n]); got != want {
		return fmt.Errorf("/proc/thread-self is %q, not %q: /proc is another pid namespace's", got, want)
	}
	return nil
}

// listedHook, when set (by tests), runs after each listing of the threads.
var listedHook func()
