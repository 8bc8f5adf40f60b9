package startsig

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Threads started while setEachThread sets the others, by threads it has not set yet, inherit
// the old affinity: it must find and set them too.
func TestSetEachThreadFollowsNewThreads(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Count() < 2 {
		t.Skipf("one CPU allowed: nothing to tell a pin from the full set")
	}
	var one unix.CPUSet
	for c := 0; ; c++ {
		if orig.IsSet(c) {
			one.Set(c)
			break
		}
	}
	// The kernel's layout: native words, as sched_setaffinity takes them.
	asBytes := func(s *unix.CPUSet) []byte {
		return unsafe.Slice((*byte)(unsafe.Pointer(s)), unsafe.Sizeof(*s))
	}
	if err := setEachThread(asBytes(&one)); err != nil {
		t.Fatalf("pinning every thread to one CPU: %v", err)
	}
	// Restore the test process's threads whatever happens below.
	defer func() { listedHook = nil; _ = setEachThread(asBytes(&orig)) }()

	const started = 8 // more than the runtime has idle: some are new threads
	release := make(chan struct{})
	defer close(release)
	first := true
	listedHook = func() {
		if !first {
			return
		}
		first = false
		for range started {
			up := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(up)
				<-release // the goroutine ends locked: its thread goes with it
			}()
			<-up
		}
	}
	if err := setEachThread(asBytes(&orig)); err != nil {
		t.Fatalf("setEachThread: %v", err)
	}
	if first {
		t.Fatal("the hook never ran")
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < started {
		t.Fatalf("%d threads, want %d at least", len(tasks), started)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			t.Fatal(err)
		}
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); err != nil {
			t.Fatalf("thread %d: %v", tid, err)
		}
		if got != orig {
			t.Errorf("thread %d is on %d CPUs, want the %d set", tid, got.Count(), orig.Count())
		}
	}
}
