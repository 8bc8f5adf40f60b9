// Command benchapp is the app the benchmark (go run ./bench) runs under each init. It is built
// to cost as little as possible, so that what the benchmark measures is the init, not the app.
//
//	benchapp echo           block SIGUSR1 everywhere, write "R" on fd 3 when ready, then one
//	                        byte on fd 3 for each SIGUSR1 received (read from a signalfd)
//	benchapp stamp          write CLOCK_MONOTONIC (8 bytes, ns, little-endian) on fd 3 and exit
//	benchapp orphans N      leave N orphans blocked reading fd 4 (the init inherits them as
//	                        children), write "R" on fd 3, then idle; closing the write end of
//	                        fd 4's pipe releases all the orphans at once
//
// The orphans are made with raw clone(2) and never exec: each is a copy of this process that
// only reads fd 4 and exits, so 2000 of them cost a few MiB, not 2000 Go runtimes.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maskedEnv marks the second exec of echo mode, the one that starts with SIGUSR1 blocked.
const maskedEnv = "BENCHAPP_MASKED=1"

// Fds the benchmark passes.
const (
	readyFd   = 3
	releaseFd = 4
)

func main() {
	var err error
	switch arg(1) {
	case "echo":
		err = echo()
	case "stamp":
		err = stamp()
	case "orphans":
		err = orphans(arg(2))
	default:
		err = fmt.Errorf("unknown mode %q", arg(1))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchapp %s: %v\n", arg(1), err)
		os.Exit(2)
	}
}

func arg(i int) string {
	if i < len(os.Args) {
		return os.Args[i]
	}
	return ""
}

// echo answers each SIGUSR1 with one byte on fd 3.
//
// The Go runtime installs a handler for every signal, so a SIGUSR1 that is not blocked would go
// through the handler and the os/signal goroutine, adding the app's own scheduling to every
// sample. The signal mask is inherited across execve and the runtime keeps blockable signals
// blocked on every thread it starts when they were blocked at exec, so echo blocks SIGUSR1 and
// re-executes itself: from then on the signal can only be taken from the signalfd, by a thread
// sleeping in read(2).
func echo() error {
	if os.Getenv("BENCHAPP_MASKED") != "1" {
		runtime.LockOSThread()
		var set unix.Sigset_t
		addSig(&set, unix.SIGUSR1)
		if err := unix.PthreadSigmask(unix.SIG_BLOCK, &set, nil); err != nil {
			return fmt.Errorf("block SIGUSR1: %w", err)
		}
		err := syscall.Exec(os.Args[0], os.Args, append(os.Environ(), maskedEnv))
		return fmt.Errorf("re-exec with SIGUSR1 blocked: %w", err)
	}
	var set unix.Sigset_t
	addSig(&set, unix.SIGUSR1)
	sfd, err := unix.Signalfd(-1, &set, unix.SFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("signalfd: %w", err)
	}
	if _, err := unix.Write(readyFd, []byte("R")); err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	runtime.LockOSThread()
	buf := make([]byte, unsafe.Sizeof(unix.SignalfdSiginfo{}))
	one := []byte("x")
	for {
		if _, err := unix.Read(sfd, buf); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return fmt.Errorf("read signalfd: %w", err)
		}
		if _, err := unix.Write(readyFd, one); err != nil {
			// The benchmark has gone: nothing left to answer.
			return nil
		}
	}
}

// stamp tells the benchmark when the app got to run: the time from launching the init to here,
// minus the same with no init, is how long the init took to start the app.
func stamp() error {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return fmt.Errorf("clock: %w", err)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(ts.Nano()))
	if _, err := unix.Write(readyFd, b[:]); err != nil {
		return fmt.Errorf("write stamp: %w", err)
	}
	return nil
}

func addSig(set *unix.Sigset_t, s unix.Signal) {
	set.Val[(s-1)/64] |= 1 << ((uint(s) - 1) % 64)
}

// orphans leaves n orphans, reports ready and idles until killed.
func orphans(ns string) error {
	n, err := strconv.Atoi(ns)
	if err != nil || n < 1 {
		return fmt.Errorf("orphans: bad count %q", ns)
	}
	runtime.LockOSThread()
	// Every signal stays blocked in the clones: they run no Go code, so a Go signal handler
	// must never run in them. They inherit the mask of this thread at clone time.
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^uint64(0)
	}
	if err := unix.PthreadSigmask(unix.SIG_SETMASK, &all, &old); err != nil {
		return fmt.Errorf("block signals: %w", err)
	}
	pid, errno := cloneOrphans(n, releaseFd)
	_ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	if errno != 0 {
		return fmt.Errorf("clone: %w", errno)
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(int(pid), &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the orphans' parent: %w", err)
		}
		break
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("the orphans' parent failed: status %v", ws)
	}
	if _, err := unix.Write(readyFd, []byte("R")); err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	// Not select{}: with no other goroutine the runtime would call that a deadlock and exit,
	// and the init would see its app die.
	for {
		time.Sleep(time.Hour)
	}
}

// cloneOrphans forks a parent that forks n children and exits at once, so the children are
// orphans from the start and belong to the init. Each child blocks reading fd until the pipe's
// write end is closed, then exits 0. Nothing after the first clone may touch the Go runtime
// (no allocation, no stack growth, no scheduler): hence nosplit and raw system calls only, as
// in syscall.forkAndExecInChild.
//
//go:nosplit
//go:norace
func cloneOrphans(n int, fd int) (pid uintptr, errno syscall.Errno) {
	r1, _, e := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 || r1 != 0 {
		return r1, e
	}
	// The orphans' parent.
	for i := 0; i < n; i++ {
		r1, _, e = syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
		if e != 0 {
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 1, 0, 0)
		}
		if r1 == 0 {
			// An orphan: wait for EOF (or anything) on fd, then exit.
			var b [8]byte
			syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), 1)
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
		}
	}
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	return 0, 0
}
