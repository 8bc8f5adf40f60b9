//go:build linux

package main

import (
	"runtime"
	"sync"
)

// Spare threads: drainit has the Go runtime start threads while it still can. A thread is a
// task, which a cgroup's pids.max counts; when clone fails with EAGAIN the runtime tries again
// for 210 ms and then aborts the program, for drainit as PID 1 the whole container. An app that
// fills the limit leaves no task for the thread a stop sequence's bursts of work make the runtime
// want. Threads the runtime has started and that become idle stay (only a thread whose locked
// goroutine exits ends). docs/exit-and-logs.md, "When the container runs out", has the
// measurements.

// startSpareThreads has the runtime start threads until n goroutines are locked to n threads at
// once, then lets them go: every thread the runtime has then stays for the scheduler, idle until it
// needs it. Threads that were idle already count among the n; the runtime creates the rest. It
// takes about 0.1-0.2 ms on 2 vCPUs (each locked goroutine hands its processor over to another
// thread), so it is not for a start-up path. Calling it when the process limit leaves no room
// aborts the program.
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
