package startsig

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/drainit/drainit/integration/testenv"
)

// Threads started while setEachThread sets the others, by threads it has not set yet, inherit
// the old affinity: it must find and set them too.
func TestSetEachThreadFollowsNewThreads(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Count() < 2 {
		testenv.SkipUnlessCI(t, "one CPU allowed: nothing to tell a pin from the full set")
	}
	var one unix.CPUSet
	for c := 0; ; c++ {
		if orig.IsSet(c) {
			one.Set(c)
			break
		}
	}
	if err := setEachThread(maskBytes(&one)); err != nil {
		t.Fatalf("pinning every thread to one CPU: %v", err)
	}
	// Restore the test process's threads whatever happens below.
	defer func() { listedHook = nil; _ = setEachThread(maskBytes(&orig)) }()

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
	if err := setEachThread(maskBytes(&orig)); err != nil {
		t.Fatalf("setEachThread: %v", err)
	}
	if first {
		t.Fatal("the hook never ran")
	}
	threads := threadAffinities(t)
	if len(threads) < started {
		t.Fatalf("%d threads, want %d at least", len(threads), started)
	}
	for tid, got := range threads {
		if got != orig {
			t.Errorf("thread %d is on %d CPUs, want the %d set", tid, got.Count(), orig.Count())
		}
	}
}

// Where the CPUs the process started with are no longer allowed (its cpuset lost them all
// meanwhile), sched_setaffinity refuses that mask (EINVAL): Unpin asks for every CPU instead,
// which the kernel narrows to the allowed ones. CPUs that are not online stand in for a lost set.
func TestUnpinWhenTheStartCPUsAreGone(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	// The package's state as it was, saved before anything here writes to it.
	saved := struct {
		mask, pin [512]byte
		n         uintptr
		p         uint32
	}{origMask, pinMask, origLen, pinned}
	defer func() {
		origMask, pinMask, origLen, pinned = saved.mask, saved.pin, saved.n, saved.p
		if err := setEachThread(maskBytes(&orig)); err != nil {
			t.Errorf("restoring the test's affinity: %v", err)
		}
	}()
	n, _, errno := unix.RawSyscall(unix.SYS_SCHED_GETAFFINITY, 0, uintptr(len(origMask)), uintptr(unsafe.Pointer(&origMask[0])))
	if errno != 0 {
		t.Fatal(errno)
	}
	gone := int(n)*8 - 2 // the mask's last two CPUs: not online unless the machine has that many
	if orig.IsSet(gone) || orig.IsSet(gone+1) {
		testenv.SkipUnlessCI(t, "CPUs "+strconv.Itoa(gone)+" and "+strconv.Itoa(gone+1)+" are allowed: no CPU to stand in for a lost one")
	}
	origMask = [512]byte{}
	origMask[gone/8] |= 1 << (gone % 8)
	origMask[(gone+1)/8] |= 1 << ((gone + 1) % 8)
	origLen, pinned = n, 1
	if err := Unpin(); err != nil {
		t.Fatalf("Unpin with the start's CPUs gone: %v, want every allowed CPU instead", err)
	}
	for tid, got := range threadAffinities(t) {
		for c := range len(got) * 64 {
			if orig.IsSet(c) && !got.IsSet(c) {
				t.Errorf("thread %d lacks CPU %d, which the process was allowed", tid, c)
				break
			}
		}
	}
}

// maskBytes is s in the kernel's layout (native words), as sched_setaffinity takes it.
func maskBytes(s *unix.CPUSet) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(s)), unsafe.Sizeof(*s))
}

// threadAffinities is the CPU affinity of every thread of the test process, by thread ID.
func threadAffinities(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int]unix.CPUSet, len(tasks))
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			t.Fatal(err)
		}
		var got unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &got); errors.Is(err, unix.ESRCH) {
			continue // it exited after the listing (a locked thread whose goroutine ended): nothing to check
		} else if err != nil {
			t.Fatalf("thread %d: %v", tid, err)
		}
		out[tid] = got
	}
	return out
}
