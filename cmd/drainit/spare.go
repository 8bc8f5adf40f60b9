//go:build linux

package main

import (
	"runtime"
	"sync"
)

// Spare threads: drainit has the Go runtime start threads while it still can.
//
// The Go runtime starts an OS thread whenever it wants one and has none idle (a goroutine blocked
// in a system call, a hand-off between threads), and a thread is a task: it counts against a
// cgroup's pids.max like a process. When clone fails with EAGAIN the runtime tries again for 210 ms
// and then aborts the program ("runtime: failed to create new OS thread", "fatal error:
// newosproc"). For drainit as PID 1 that ends the container: every process SIGKILLed, no drain. An
// app that has filled the container's pids limit (a process leak, a fork bomb the limit caps)
// leaves no task for that thread, and a stop sequence's bursts of work (a signal flood, hooks'
// output) made the runtime want one: as PID 1 in a PID namespace at a pids limit of 40, with an app
// filling it 0.5 s after its start and a stop under a flood of signals, 2 runs in 25 aborted so;
// with the threads startSpareThreads(4) adds (10 in all, 7-9 before), none of 25 did. (That was
// with two Ps; drainit now runs on one, with 7 threads: startSpareThreads(5) keeps it at 11-15.)
//
// Threads the runtime has started and that become idle stay: it never ends them (only a thread
// whose locked goroutine exits ends).

// startSpareThreads has the runtime start threads until n goroutines are locked to n threads at
// once, then lets them go: every thread the runtime has then stays for the scheduler, idle until it
// needs it. Threads that were idle already count among the n; the runtime creates the rest. It
// takes about 0.1-0.2 ms on 2 vCPUs (each locked goroutine hands its processor over to another
// thread), so it is not for a start-up path. Calling it when the process limit leaves no room
// aborts the program: see above.
func startSpareThreads(n int) {
	var locked sync.WaitGroup
	release := make(chan struct{})
	locked.Add(n)
	for range n {
		go func() {
			runtime.LockOSThread()
			locked.Done()
			<-release
			// Unlocked before it exits: the thread goes back to the scheduler's idle ones
			// rather than ending with the goroutine.
			runtime.UnlockOSThread()
		}()
	}
	locked.Wait()
	close(release)
}
