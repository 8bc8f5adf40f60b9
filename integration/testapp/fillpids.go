package main

import (
	"errors"
	"flag"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// fillPids fills the container's pids limit after a while, as an app that leaks processes until
// it reaches the limit, and holds it: each process it forks waits for SIGTERM (the stop signal,
// which drainit sends to the app's group) with every other signal blocked, and a fork that fails
// with EAGAIN is tried again a millisecond later, so that a task freed is taken back at once. It
// prints "pids full N" (N: the processes it forked) the first time a fork fails, and exits 0 on
// SIGTERM.
func fillPids(args []string) error {
	fs := flag.NewFlagSet("fill-pids", flag.ContinueOnError)
	after := fs.Duration("after", 0, "start forking after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// SIGUSR1 is what a test floods drainit with, which forwards it to the app's group.
	signal.Ignore(syscall.SIGUSR1)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	// The Go runtime of this app too aborts when it wants a thread at the limit: four threads
	// locked at once, then let go, stay for it (drainit does the same, cmd/drainit/spare.go).
	var locked sync.WaitGroup
	release := make(chan struct{})
	locked.Add(4)
	for range 4 {
		go func() {
			runtime.LockOSThread()
			locked.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	close(release)
	say("ready app %d", os.Getpid())
	select {
	case <-time.After(*after):
	case <-term:
		say("got app SIGTERM")
		return nil
	}
	n, full := 0, false
	for {
		select {
		case <-term:
			say("got app SIGTERM")
			return nil
		default:
		}
		switch err := forkHolder(); {
		case err == 0:
			n++
		case err == syscall.EAGAIN:
			if !full {
				say("pids full %d", n)
				full = true
			}
			time.Sleep(time.Millisecond)
		default:
			return errors.New("fork: " + err.Error())
		}
	}
}

// holderDefault is a kernel struct sigaction all zero: SIG_DFL, no flags, an empty mask.
var holderDefault [4]uint64

// holderMask blocks every signal but SIGTERM.
var holderMask = ^uint64(1 << (syscall.SIGTERM - 1))

// forkHolder forks a process that does nothing but wait to be ended, with a raw clone: it runs
// no Go code after the fork (a Go program cannot fork and go on), only raw system calls, so that
// it takes one task and no more. SIGTERM gets its default action (the handler the Go runtime
// installed for signal.Notify would only queue it).
//
//go:nosplit
//go:norace
func forkHolder() syscall.Errno {
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 || pid != 0 {
		return errno
	}
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGTERM), uintptr(unsafe.Pointer(&holderDefault)), 0, 8, 0, 0)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 2 /* SIG_SETMASK */, uintptr(unsafe.Pointer(&holderMask)), 0, 8, 0, 0)
	for {
		syscall.RawSyscall6(syscall.SYS_PPOLL, 0, 0, 0, 0, 0, 0) // until a signal ends it
	}
}
